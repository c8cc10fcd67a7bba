#pragma once
// The report's charts: gnuplot's SVG terminal, run without a shell on a data file and a script the
// report writes (labels from result files go into the data file only, made safe by gnuplot_label).
// No gnuplot, no charts: the report says so and is complete otherwise.
#include <filesystem>
#include <string>

#include "document.h"

namespace condbench::report {

// gnuplot on PATH, or "".
std::string find_gnuplot();

// A name as a gnuplot data-file label: only characters no gnuplot syntax gives a meaning to.
std::string gnuplot_label(const std::string& text);

// Where a report's charts go: gnuplot ("" for none), the charts folder, gnuplot's scratch folder.
struct Charts {
  // A report draws at most this many charts (each a gnuplot process and an SVG): a result file of
  // thousands of batch sizes would otherwise run gnuplot thousands of times for a report of hundreds
  // of megabytes. The tables keep every figure; the report says how many charts it left out.
  static constexpr int kMaxCharts = 64;

  std::string gnuplot;
  std::filesystem::path dir, work;
  int drawn = 0, failed = 0, not_drawn = 0;

  bool enabled() const { return !gnuplot.empty(); }
  // Draws chart `id` and adds it to `doc` under `caption`: `data` is the data file's text (labels
  // from gnuplot_label only), `settings` gnuplot's set commands, `plot` the plot command, which
  // refers to the data file as '<id>.dat'. A chart gnuplot fails to draw is left out, saying so in
  // its place; past kMaxCharts, charts are counted in not_drawn and not drawn.
  void draw(Document& doc, const std::string& id, const std::string& data, const std::string& settings,
            const std::string& plot, const std::string& caption, const std::string& size = "860,460");
};

}  // namespace condbench::report
