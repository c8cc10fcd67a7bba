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
  std::string gnuplot;
  std::filesystem::path dir, work;
  int drawn = 0;

  bool enabled() const { return !gnuplot.empty(); }
  // Draws chart `id` and adds it to `doc` under `caption`: `data` is the data file's text (labels
  // from gnuplot_label only), `settings` gnuplot's set commands, `plot` the plot command, which
  // refers to the data file as '<id>.dat'. A chart gnuplot fails to draw is left out.
  void draw(Document& doc, const std::string& id, const std::string& data, const std::string& settings,
            const std::string& plot, const std::string& caption, const std::string& size = "860,460");
};

}  // namespace condbench::report
