// A report section of your own (example): for each model and batch, how far apart the fastest and
// the slowest strategy are in each scenario. The shortest honest section: one file, registered in
// one line, reading the analysis every section shares (ReportInput) and writing through the
// document writer, so the same code makes report.md and report.html. It states a ratio of medians,
// not a verdict: verdicts come from judge() (analysis.h), as in the built-in sections.
#include <algorithm>

#include "section.h"

namespace condbench::report {
namespace {

void spread(const ReportInput& in, Charts& /*charts*/, Document& doc) {
  doc.paragraph("The fastest and the slowest strategy in each scenario, and the ratio of their medians.");
  for (const Group& g : in.groups) {
    Table t{{"scenario", "fastest", "median (µs)", "slowest", "median (µs)", "ratio"}, {}};
    for (const std::string& scenario : g.scenarios) {
      const std::vector<std::string> ranked = by_median(g, g.strategies, scenario);
      if (ranked.size() < 2) continue;
      const Cell &fast = *g.cell(ranked.front(), scenario), &slow = *g.cell(ranked.back(), scenario);
      t.rows.push_back({scenario, ranked.front(), number(fast.median_us), ranked.back(), number(slow.median_us),
                        format_ratio(slow.median_us / fast.median_us)});
    }
    if (t.rows.empty()) continue;
    doc.heading(3, group_title(g));
    doc.table(t);
  }
}

}  // namespace

// After "Where the time goes" (70), before "Skipped" (90); nullptr: it always applies.
CONDBENCH_REPORT_SECTION(spread, "Spread between strategies", 80, nullptr, spread);

}  // namespace condbench::report
