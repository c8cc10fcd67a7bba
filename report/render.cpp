#include "render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "charts.h"
#include "document.h"
#include "section.h"
#include "stability.h"

namespace condbench::report {

namespace fs = std::filesystem;

RenderResult write_report(const std::vector<ResultFile>& files, const std::string& dir, const std::string& gnuplot,
                          double unstable_cv) {
  RenderResult result;
  const fs::path out(dir);
  Charts charts{gnuplot, out / "charts", out / ".gnuplot"};
  if (!gnuplot.empty()) {
    fs::create_directories(charts.dir);
    fs::create_directories(charts.work);
  } else {
    result.notes.push_back("Charts were skipped: gnuplot is not installed (scripts/setup installs it).");
  }
  const std::vector<Group> all = make_groups(files, unstable_cv);
  const auto floors = primitive_floors(files);
  const RunCheck check = check_run(files, all);
  const std::vector<Group> groups(all.begin(),
                                  all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), kMaxGroupsShown)));
  if (groups.size() < all.size())
    result.notes.push_back("This report shows the first " + std::to_string(groups.size()) + " of the " +
                           std::to_string(all.size()) + " groups (device, model and batch), up to " +
                           group_title(groups.back()) + ": a report shows at most " + std::to_string(kMaxGroupsShown) +
                           ". condbench-report --table FILE... prints every cell.");
  const auto limits = cpu_limits(files);
  const ReportInput input{files, groups, floors, limits, check, unstable_cv};
  result.busy = !check.busy.empty();

  Document doc;
  doc.heading(1, "condbench report");
  if (!check.busy.empty()) {
    doc.paragraph(
        "Recorded on a busy machine; its cells are marked busy. Their verdicts stand where the intervals and the "
        "drift allowance measured on the run's own equal-work pairs still hold (\"The drift allowance\"), and "
        "are withheld where not. A quiet machine narrows the intervals (docs/trusting.md):");
    doc.bullets(check.busy);
  }
  if (!check.notes.empty()) doc.bullets(check.notes);
  for (const std::string& note : result.notes) doc.paragraph(note);
  for (const Section& section : report_sections()) {
    if (section.applies && !section.applies(input)) continue;
    doc.heading(2, section.title);
    section.write(input, charts, doc);
  }
  result.charts = charts.drawn;
  if (charts.not_drawn > 0)
    doc.paragraph(std::to_string(charts.not_drawn) + " more charts were not drawn: a report draws at most " +
                  std::to_string(Charts::kMaxCharts) + " (its tables hold every figure).");

  write_text(out / "report.md", doc.markdown());
  write_text(out / "report.html", doc.html("condbench report"));
  if (fs::exists(charts.work)) fs::remove_all(charts.work);
  return result;
}

std::string comparison_markdown(const std::vector<Comparison>& rows, const std::string& a, const std::string& b,
                                double min_effect, const std::vector<std::string>& warnings) {
  Document doc;
  doc.paragraph("A: " + a);
  doc.paragraph("B: " + b);
  for (const std::string& w : warnings) doc.paragraph("WARNING: " + w);
  const auto percent = [](double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
    return std::string(text);
  };
  // "[low – high]", appended: GCC 12 warns wrongly (-Wrestrict) on a chain that starts with "[" +
  const auto bracketed = [](const std::string& low, const std::string& separator, const std::string& high) {
    std::string text = "[";
    text += low;
    text += separator;
    text += high;
    return text + "]";
  };
  const auto change_text = [&](const ChangeSummary& c) {
    return percent(c.median_change) + " " +
           (std::isnan(c.interval.low) ? std::string("-")
                                       : bracketed(percent(c.interval.low), " – ", percent(c.interval.high)));
  };
  // The headline: each strategy, all its benchmarks together, against the run's drift.
  const StrategyComparisons together = compare_strategies(rows, min_effect);
  Table strategies{{"strategy (all its benchmarks)", "benchmarks", "medians up / down", "median change",
                    "against the drift", "verdict"},
                   {},
                   false};
  for (const StrategyComparison& s : together.strategies)
    strategies.rows.push_back({s.strategy, std::to_string(s.change.benchmarks),
                               std::to_string(s.change.slower) + " / " + std::to_string(s.change.faster),
                               change_text(s.change), s.against_run ? change_text(*s.against_run) : "-",
                               to_string(s.decisive().verdict)});
  doc.table(strategies);
  doc.paragraph(
      "By strategy: the median change over the strategy's benchmarks, with its distribution-free " +
      number(100 * kIntervalConfidence) +
      "% interval (a sign test); where the run has 3 or more strategies, the verdict is on the change against the "
      "drift (each benchmark's change divided by it), so that drift of the machine, which moves every strategy "
      "alike, is not called a change. FASTER/SLOWER when the whole interval lies beyond " +
      number(100 * min_effect, 3) + "%, SAME when it lies inside the " + format_ratio(kEquivalenceMargin) +
      " margin of sameness, AMBIGUOUS otherwise; fewer than 6 benchmarks cannot reach that (TOO FEW BENCHMARKS). "
      "This is the verdict --fail-on-regression counts.");
  const ChangeSummary& run = together.whole_run;
  doc.paragraph(
      "Whole run: " + change_text(run) + " over " + std::to_string(run.benchmarks) + " benchmarks (" +
      std::to_string(run.slower) + " up, " + std::to_string(run.faster) + " down), " + to_string(run.verdict) +
      ". A shift of the whole run is a change to every strategy or the machine drifting between the runs; "
      "two runs cannot tell which, an A/A pair can." +
      (together.drift ? " Drift, the median of the strategies' median changes: " + percent(*together.drift) + "."
                      : ""));
  Table each{{"benchmark", "A median (µs)", "B median (µs)", "change", "B / A (99%)", "verdict"}, {}, false};
  for (const Comparison& c : rows)
    each.rows.push_back({c.name, number(c.median_a_us), number(c.median_b_us), percent(c.change),
                         c.ratio.bounded() ? bracketed(number(c.ratio.low), "–", number(c.ratio.high)) : "-",
                         to_string(c.verdict)});
  doc.table(each);
  const ComparisonSummary sum = summarize(rows);
  doc.paragraph("Summary: " + std::to_string(sum.faster) + " faster, " + std::to_string(sum.slower) + " slower, " +
                std::to_string(sum.same) + " same, " + std::to_string(sum.ambiguous) + " ambiguous, " +
                std::to_string(sum.too_few) + " too few repetitions, of " + std::to_string(rows.size()) +
                " (one by one, on the interval of the ratio B / A: FASTER/SLOWER when it lies beyond " +
                number(100 * min_effect, 3) + "% and the drift allowance between runs, " +
                format_ratio(kDriftBetweenProcesses) +
                "; SAME only when the interval, widened by that allowance, lies "
                "inside the " +
                format_ratio(kEquivalenceMargin) +
                " margin of sameness, which one benchmark between two runs cannot reach: the strategies' verdicts "
                "above can; see docs/statistics.md)");
  return doc.markdown();
}

std::string latency_table_markdown(const std::vector<ResultFile>& files) {
  const std::vector<Group> groups = make_groups(files);
  std::set<std::string> all;
  for (const Group& g : groups) all.insert(g.strategies.begin(), g.strategies.end());
  Table t{{"device", "model", "batch", "scenario"}, {}};
  for (const std::string& s : all) t.header.push_back(s + " (µs)");
  for (const Group& g : groups)
    for (const std::string& scenario : g.scenarios) {
      std::vector<std::string> row{g.device_label, g.model_text(), std::to_string(g.batch), scenario};
      for (const std::string& s : all) {
        const Cell* c = g.cell(s, scenario);
        const std::optional<double> up = g.speedup_over_eager(s, scenario);
        row.push_back(!c ? "-" : number(c->median_us) + (up && s != kEagerHost ? " (" + format_ratio(*up) + ")" : ""));
      }
      t.rows.push_back(std::move(row));
    }
  Document doc;
  doc.table(t);
  doc.paragraph(median_time_text(groups) + "; in parentheses the speedup of medians over " + std::string(kEagerHost) +
                " (above 1× is faster).");
  return doc.markdown();
}

}  // namespace condbench::report
