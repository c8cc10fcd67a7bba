#pragma once
// Writing the report: report.md, a self-contained report.html (charts inlined as SVG, no external
// script or font) and charts/*.svg, drawn by gnuplot's SVG terminal when gnuplot is installed. The
// report is its registered sections (section.h) in order, written through the document writer
// (document.h); so are the --compare and --table outputs.
#include <string>
#include <vector>

#include "analysis.h"
#include "comparison.h"
#include "result_file.h"

namespace condbench::report {

struct RenderResult {
  int charts = 0;
  std::vector<std::string> notes;  // e.g. that charts were skipped, and why
  bool busy = false;               // a file was recorded on a busy machine: the report opens saying so
};

// A report shows at most this many groups (a device, model and batch: a heading and tables in each
// per-group section, and charts): a file of thousands of batch sizes would otherwise make a report
// of hundreds of megabytes. A full run on a CPU and a GPU has about 170 groups. The groups left out
// are the last in order (device, model, batch), the report says so, and --table prints every cell.
constexpr size_t kMaxGroupsShown = 512;

// Writes into `dir`, which must exist and be empty. `gnuplot`: the program, or "" for no charts.
// `unstable_cv`: above this coefficient of variation a benchmark is marked unstable.
RenderResult write_report(const std::vector<ResultFile>& files, const std::string& dir, const std::string& gnuplot,
                          double unstable_cv = kDefaultUnstableCv);

// The A/B table, in Markdown: `warnings` first (e.g. a file recorded on a busy machine), then one
// row per benchmark, then the summary line.
std::string comparison_markdown(const std::vector<Comparison>& rows, const std::string& a, const std::string& b,
                                double min_effect = kDefaultMinEffect, const std::vector<std::string>& warnings = {});

// condbench-report --table: one row per device, model, batch and scenario, one column per strategy
// (median µs, and the speedup of medians over torch/eager_host), in Markdown.
std::string latency_table_markdown(const std::vector<ResultFile>& files);

}  // namespace condbench::report
