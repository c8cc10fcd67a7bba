// The numbers in words: ratios, scenarios, medians with their intervals, a verdict's sentence, and the
// host round trip's.
#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "condbench/result_format.h"

namespace condbench::report {

namespace {

std::string percent(double fraction) {
  return std::to_string(static_cast<int>(std::floor(100 * fraction + 1e-9))) + "%";
}

}  // namespace

std::string outliers_text(size_t outliers) {
  return std::to_string(outliers) + " outlying repetition" + (outliers == 1 ? "" : "s");
}

std::string format_ratio(double ratio) {
  char text[32];
  if (ratio >= 10)
    std::snprintf(text, sizeof text, "%.0f×", ratio);
  else if (ratio >= 1)
    std::snprintf(text, sizeof text, "%.1f×", ratio);
  else  // slower: two significant digits, so 0.021× does not read as 0.0×
    std::snprintf(text, sizeof text, "%.2g×", ratio);
  return text;
}

std::string format_drift(double drift) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g×", drift);
  return text;
}

std::string format_at_least(double ratio) {
  if (ratio < 1.1) return percent(ratio - 1.0);
  char text[32];
  if (ratio >= 10)
    std::snprintf(text, sizeof text, "%.0f×", std::floor(ratio + 1e-9));
  else
    std::snprintf(text, sizeof text, "%.1f×", std::floor(ratio * 10 + 1e-9) / 10);
  return text;
}

namespace {

// Three significant figures below 1000, whole numbers above: never an exponent.
std::string plain(double value) {
  char text[64];
  std::snprintf(text, sizeof text, std::abs(value) >= 1000 ? "%.0f" : "%.3g", value);
  return text;
}

// x rounded to three significant figures towards -inf (up = false) or +inf, so an interval printed
// never claims more than it holds.
double three_figures(double x, bool up) {
  if (!(x > 0) || !std::isfinite(x)) return x;
  const double unit = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return (up ? std::ceil(x / unit - 1e-9) : std::floor(x / unit + 1e-9)) * unit;
}

// "99%", "99.67%": a confidence as the verdicts print it.
std::string confidence_text(double confidence) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g%%", 100 * confidence);
  return text;
}

std::string ratio_text(const RatioInterval& r) {
  // Appended piece by piece: GCC 12's -Wrestrict misreads "[" + std::string (a known false positive).
  std::string text = "[";
  text.append(plain(three_figures(r.low, false))).append("–").append(plain(three_figures(r.high, true)));
  return text.append("]×");
}

}  // namespace

std::string cell_figure(const Cell& c) {
  std::string text = plain(c.median_us) + " µs [" + plain(c.interval.low) + "–" + plain(c.interval.high) + "]";
  if (c.outliers > 0) text += ", " + outliers_text(c.outliers);
  return text;
}

std::string verdict_text(const Judgement& j, const std::string& fast, const std::string& slow, const Cell& f,
                         const Cell& s) {
  std::string drift = j.drift > 1 ? ", allowing " + format_drift(j.drift) +
                                        (j.drift_measured ? " for the drift this run's equal-work pairs showed"
                                                          : " for drift between separately timed cells")
                                  : "";
  if (j.withheld)
    drift += "; withheld: the rule's allowance alone would call it " + std::string(to_string(*j.withheld)) + ", but " +
             j.withheld_by + " drifted that much doing the same work";
  switch (j.standing) {
    case Standing::faster:
      return fast + " is at least " + format_at_least(j.factor) + " faster than " + slow + " (ratio " +
             ratio_text(j.ratio) + drift + ")";
    case Standing::same:
      return fast + " and " + slow + " are the same within " + format_ratio(kEquivalenceMargin) +
             ": the interval of their ratio, " + ratio_text(j.ratio) + ", lies inside that margin of sameness";
    case Standing::ambiguous:
      break;
  }
  const std::string between = "ambiguous between " + fast + " and " + slow + ": ";
  if (!j.ratio.valid) return between + "a repetition's time is zero, negative or not a number";
  if (!j.ratio.bounded())
    return between + std::to_string(f.repetitions) + " and " + std::to_string(s.repetitions) +
           " repetitions are too few for a " + confidence_text(j.confidence) + " interval of their ratio";
  const std::string outliers = j.outliers > 0 ? "; " + outliers_text(j.outliers) + " in the two cells" : "";
  const std::string limits = " (it would have called " + plain(j.detectable) + "× or more, and cannot exclude up to " +
                             format_ratio(j.cannot_exclude) + outliers + ")";
  if (j.ratio.low <= 1.0 && 1.0 <= j.ratio.high)
    return between + "the ratio " + ratio_text(j.ratio) + " holds 1 but reaches past the " +
           format_ratio(kEquivalenceMargin) + " margin of sameness" + drift + limits;
  return between + "the ratio " + ratio_text(j.ratio) + " is below what this data can call" + drift + limits;
}

std::string status_text(const Judgement& j) {
  switch (j.standing) {
    case Standing::faster:
      return (j.first_faster ? "FASTER ≥" : "SLOWER ≥") + format_at_least(j.factor);
    case Standing::same:
      return "SAME";
    case Standing::ambiguous:
      break;
  }
  return "?";
}

std::string kernels_of(const std::string& strategy) {
  if (strategy.rfind("native/", 0) == 0) return "native";
  if (strategy.rfind("aoti/", 0) == 0) return "Inductor";
  if (strategy == "python/ort_if") return "ONNX Runtime";
  if (strategy.rfind("python/", 0) == 0 && strategy.find("compile") != std::string::npos) return "Inductor";
  return "ATen";
}

std::string marks_text(const Judgement& j, const Cell& a, const Cell& b, const std::string& strategy_a,
                       const std::string& strategy_b) {
  std::string marks;
  if (rule_drift(a, b) > 1) marks += "‡";
  if (j.outliers > 0) marks += "†";
  if (kernels_of(strategy_a) != kernels_of(strategy_b)) marks += "◊";
  if (a.busy || b.busy) marks += "⚑";
  if (j.withheld) marks += "⊘";
  return marks;
}

std::vector<std::string> verdict_legend() {
  return {
      "FASTER ≥N×: the first is at least N× faster (the low edge of the 99% interval of the ratio, over the "
      "drift allowance: the only factor shown); SLOWER ≥N×: the second is; SAME: the whole interval lies "
      "inside " +
          format_ratio(kEquivalenceMargin) + "; ?: neither (docs/statistics.md)",
      "‡ timed apart: in different processes or runs, or one after the other, not in interleaved rounds (a "
      "drift allowance of " +
          format_drift(kDriftBetweenProcesses) +
          "); † outlying repetitions; ◊ different kernels (condbench's, ATen's, Inductor's or ONNX Runtime's), "
          "not only another control flow; ⚑ recorded on a busy machine",
      "⊘ withheld: the drift this run's equal-work pairs showed flips it (\"The drift allowance\")",
      "condbench-report --explain \"A vs B at SCENARIO\" FILE... gives any cell's sentence (the HTML: its title)"};
}

std::string timed_unit_text(const std::vector<Group>& groups, const std::function<bool(const Group&)>& shown) {
  std::vector<std::string> inferences, tokens;
  for (const Group& g : groups) {
    std::vector<std::string>& unit = g.per_token ? tokens : inferences;
    if ((!shown || shown(g)) && std::find(unit.begin(), unit.end(), model_family(g.model)) == unit.end())
      unit.push_back(model_family(g.model));
  }
  if (inferences.empty() && !tokens.empty()) return "per generated token";
  std::string per = "per inference";
  if (!tokens.empty()) {
    per += ", and per generated token for the ";
    for (size_t i = 0; i < tokens.size(); ++i) per += (i ? " and the " : "") + tokens[i];
  }
  return per;
}

std::string median_time_text(const std::vector<Group>& groups) {
  const std::string per = timed_unit_text(groups);
  return per.find(',') == std::string::npos ? "Median wall time " + per + " in µs" : "Median wall time in µs " + per;
}

std::string round_trip_sentence(const std::map<std::string, std::map<std::string, double>>& primitive_floors) {
  std::vector<std::string> said;
  for (const auto& [device, prims] : primitive_floors) {
    const auto read = prims.find("read4_pinned_sync");
    const auto sync = prims.find("launch_sync");
    if (read == prims.end()) continue;
    std::string line = "on " + device + ", reading one exit test back to the host costs " + plain(read->second) +
                       " µs (read4_pinned_sync)";
    if (sync != prims.end())
      line += ", against " + plain(sync->second) + " µs for a launch and its synchronisation (launch_sync)";
    said.push_back(line);
  }
  if (said.empty())
    return "What one exit test's round trip to the host costs is unmeasured here: this run has no CUDA primitives "
           "(on the CPU the decision is a branch in host code, no round trip).";
  std::string text = "The host round trip each exit test pays when decided on the host: ";
  for (size_t i = 0; i < said.size(); ++i) text += (i ? "; " : "") + said[i];
  return text + " (medians of this run's primitives).";
}

}  // namespace condbench::report
