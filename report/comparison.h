#pragma once
// Two runs of the same benchmarks compared (condbench-report --compare): each benchmark on the verdict
// rule with the drift allowance between processes, and each strategy's benchmarks taken together,
// against the drift of the whole run. Plain data; render.h writes it.
#include <optional>
#include <string>
#include <vector>

#include "analysis.h"
#include "result_file.h"
#include "statistics.h"

namespace condbench::report {

enum class Verdict { same, faster, slower, ambiguous, too_few_repetitions, too_few_benchmarks };
const char* to_string(Verdict verdict);

struct Comparison {
  std::string name;
  std::string strategy;  // BenchmarkId::without_axes: what compare_strategies takes together
  double median_a_us = 0, median_b_us = 0;
  double change = 0;    // (b - a) / a
  RatioInterval ratio;  // of B / A, 99%
  Verdict verdict = Verdict::same;
};
// Each benchmark on judge(), with the drift allowance between processes (two runs are two processes):
// SLOWER when the interval of B / A starts at or above (1 + min_effect) x D, FASTER when it ends at or
// below 1 / ((1 + min_effect) x D); SAME when the interval widened by D lies inside the margin of
// sameness, which D alone exceeds (so one benchmark between two runs is never SAME); AMBIGUOUS
// otherwise; TOO FEW REPETITIONS without an interval. One benchmark alone can therefore show only
// changes of about 1.8x or more between two runs; the strategies taken together (compare_strategies)
// are the headline.
std::vector<Comparison> compare(const ResultFile& a, const ResultFile& b, double min_effect = kDefaultMinEffect);

// What two runs do not share: the benchmarks only A holds, only B holds, and those B recorded with
// an error (skipped or failed: "name: why") where A has times. compare() leaves each out of its
// rows; --compare lists them, and --fail-on-regression counts a benchmark of A that B lacks or
// errored as a regression (a strategy that stopped working is not a change of speed it can judge).
struct Coverage {
  std::vector<std::string> only_in_a, only_in_b, errored_in_b;
};
Coverage coverage(const ResultFile& a, const ResultFile& b);

struct ComparisonSummary {
  int faster = 0, slower = 0, same = 0, ambiguous = 0, too_few = 0;
};
ComparisonSummary summarize(const std::vector<Comparison>& rows);

// Many benchmarks taken together. On a shared machine the spread between two runs hides a 20%
// change in most single benchmarks; the same change moves all of a strategy's benchmarks one way,
// which the median of their changes shows. Its interval is distribution-free (median_interval over
// the benchmarks' changes; a sign test in interval form), and the verdict is FASTER or SLOWER only
// when the whole interval lies beyond `min_effect`: the conservative edge, as everywhere else; SAME
// only when it lies inside the margin of sameness (1 / kEquivalenceMargin - 1 to kEquivalenceMargin -
// 1); AMBIGUOUS otherwise.
// Fewer than 6 benchmarks cannot reach 95%: TOO FEW BENCHMARKS.
struct ChangeSummary {
  size_t benchmarks = 0, slower = 0, faster = 0;  // how many medians went up, went down
  double median_change = 0;                       // (b - a) / a
  MedianInterval interval;                        // of median_change
  Verdict verdict = Verdict::same;
};

struct StrategyComparison {
  std::string strategy;  // the benchmark name without its key:value axes: "early_exit/cpu/native/fused"
  ChangeSummary change;  // its benchmarks as they are
  // Its benchmarks against the run's drift: each change divided by StrategyComparisons::drift.
  // Between two runs the machine drifts, and drift moves every strategy alike; this is what one
  // strategy did beyond that. Only when the run has 3 or more strategies, so that one strategy
  // that changed cannot move the drift estimate.
  std::optional<ChangeSummary> against_run;
  const ChangeSummary& decisive() const { return against_run ? *against_run : change; }
};

struct StrategyComparisons {
  // Every benchmark: a shift here is a change to everything, or the machine drifting between the
  // runs; two runs cannot tell which (an A/A pair can).
  ChangeSummary whole_run;
  // The drift each strategy is judged against: the median of the strategies' median changes. With
  // 3 or more strategies, one that changed (however many benchmarks it has) cannot move it; the
  // median over all benchmarks could (a third of them 20% slower moves it by several percent).
  std::optional<double> drift;
  std::vector<StrategyComparison> strategies;  // by name
};
constexpr size_t kMinStrategiesForDrift = 3;
StrategyComparisons compare_strategies(const std::vector<Comparison>& rows, double min_effect = kDefaultMinEffect);

}  // namespace condbench::report
