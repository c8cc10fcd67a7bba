#pragma once
// A report section: a heading, whether it has anything to say, and what it writes under the
// heading, registered in one line beside its code (report/sections/*.cpp, one file each; a section
// of your own is one more file: examples/report_section/). The report is the registered sections,
// in order; each reads the same ReportInput, made once, and writes through the document writer, so
// it never formats Markdown or HTML itself.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis.h"
#include "charts.h"
#include "document.h"
#include "result_file.h"
#include "stability.h"

namespace condbench::report {

// Everything a section reads: the result files and the analysis of them.
struct ReportInput {
  const std::vector<ResultFile>& files;
  const std::vector<Group>& groups;
  const std::map<std::string, std::map<std::string, double>>& floors;  // device -> primitive -> µs
  const std::map<std::string, CpuLimits>& limits;                      // device -> one core's limits
  const RunCheck& check;
  double unstable_cv;
};

struct Section {
  const char* title;
  int order;                            // its place: the built-in sections are at 10, 20, ... 90
  bool (*applies)(const ReportInput&);  // nullptr: always
  void (*write)(const ReportInput&, Charts&, Document&);
};

bool register_section(const Section& section);
// Every registered section, by order (then title).
std::vector<Section> report_sections();

#define CONDBENCH_REPORT_SECTION(id, title, order, applies, write) \
  static const bool condbench_section_registered_##id =            \
      ::condbench::report::register_section({title, order, applies, write})

// What several sections say alike.
// "cpu · X · mlp h64 ×3 · batch 1": a group in full (a chart's caption).
std::string group_title(const Group& g);
// "mlp h64 ×3 · batch 1": a group's heading, under its machine's (each fact once).
std::string group_heading(const Group& g);
// Before the first group of each machine (device label), that machine's heading at `level`; `last`
// is the label headed last, kept by the caller.
void machine_heading(Document& doc, int level, const Group& g, std::string& last);
// A chart's file name and anchor, unique in the report: its kind, the group's place, batch and sizes.
std::string chart_id(const Group& g, const char* kind, size_t index);
// "[1.2–2.1]": the interval of a median, or "-" without one.
std::string interval_text(const MedianInterval& interval);
// The one-core floor of a strategy's cell, where the run measured the CPU primitives.
std::optional<Floor> cell_floor(const ReportInput& in, const Group& g, const std::string& strategy, const Cell& c);

}  // namespace condbench::report
