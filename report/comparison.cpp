#include "comparison.h"

#include <cmath>
#include <map>

namespace condbench::report {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::same:
      return "SAME";
    case Verdict::faster:
      return "FASTER";
    case Verdict::slower:
      return "SLOWER";
    case Verdict::ambiguous:
      return "AMBIGUOUS";
    case Verdict::too_few_repetitions:
      return "TOO FEW REPETITIONS";
    case Verdict::too_few_benchmarks:
      return "TOO FEW BENCHMARKS";
  }
  return "?";
}

std::vector<Comparison> compare(const ResultFile& a, const ResultFile& b, double min_effect) {
  std::map<std::string, const Series*> in_b;
  for (const Series& s : b.series)
    if (!s.times_us.empty()) in_b[s.name] = &s;
  std::vector<Comparison> out;
  for (const Series& s : a.series) {
    auto it = in_b.find(s.name);
    if (s.times_us.empty() || it == in_b.end()) continue;
    const std::vector<double>& times_b = it->second->times_us;
    Comparison c;
    c.name = s.name;
    c.strategy = s.without_axes();
    c.median_a_us = median(s.times_us);
    c.median_b_us = median(times_b);
    c.change = (c.median_b_us - c.median_a_us) / c.median_a_us;
    c.ratio = ratio_interval(s.times_us, times_b);  // pairwise b / a
    // judge()'s verdict, the two runs as two files: two processes, with the drift allowance between them.
    Cell in_a = make_cell(s.times_us), in_b_cell = make_cell(times_b);
    in_b_cell.file = 1;
    const Judgement j = judge(in_a, in_b_cell, min_effect);
    if (!c.ratio.bounded())
      c.verdict = Verdict::too_few_repetitions;
    else if (j.standing == Standing::faster)
      c.verdict = j.first_faster ? Verdict::slower : Verdict::faster;
    else if (j.standing == Standing::same)
      c.verdict = Verdict::same;
    else
      c.verdict = Verdict::ambiguous;
    out.push_back(c);
  }
  return out;
}

Coverage coverage(const ResultFile& a, const ResultFile& b) {
  std::map<std::string, const Series*> in_a, in_b;
  for (const Series& s : a.series) in_a.emplace(s.name, &s);
  for (const Series& s : b.series) in_b.emplace(s.name, &s);
  Coverage c;
  for (const auto& [name, s] : in_a) {
    if (s->times_us.empty()) continue;  // A's own errors are not B's to answer for
    const auto there = in_b.find(name);
    if (there == in_b.end())
      c.only_in_a.push_back(name);
    else if (there->second->times_us.empty())
      c.errored_in_b.push_back(name + ": " + (there->second->error.empty() ? "no times" : there->second->error));
  }
  for (const auto& [name, s] : in_b)
    if (!s->times_us.empty() && !in_a.count(name)) c.only_in_b.push_back(name);
  return c;
}

ComparisonSummary summarize(const std::vector<Comparison>& rows) {
  ComparisonSummary summary;
  for (const Comparison& c : rows) switch (c.verdict) {
      case Verdict::faster:
        ++summary.faster;
        break;
      case Verdict::slower:
        ++summary.slower;
        break;
      case Verdict::same:
        ++summary.same;
        break;
      case Verdict::ambiguous:
        ++summary.ambiguous;
        break;
      case Verdict::too_few_repetitions:
      case Verdict::too_few_benchmarks:
        ++summary.too_few;
        break;
    }
  return summary;
}

namespace {

// `log_changes`: log(b / a) per benchmark, so that a change and its inverse weigh alike.
ChangeSummary summarize_changes(const std::vector<double>& log_changes, double min_effect) {
  ChangeSummary s;
  s.benchmarks = log_changes.size();
  for (double c : log_changes) {
    s.slower += c > 0;
    s.faster += c < 0;
  }
  const MedianInterval logs = median_interval(log_changes);
  s.median_change = std::expm1(median(log_changes));
  s.interval = {std::expm1(logs.low), std::expm1(logs.high), logs.confidence};
  if (s.interval.confidence < kIntervalConfidence)
    s.verdict = Verdict::too_few_benchmarks;
  else if (s.interval.low >= min_effect)
    s.verdict = Verdict::slower;
  else if (s.interval.high <= -min_effect)
    s.verdict = Verdict::faster;
  else if (s.interval.low * kEquivalenceMargin >= 1.0 - kEquivalenceMargin &&
           s.interval.high <= kEquivalenceMargin - 1.0)
    s.verdict = Verdict::same;  // the whole interval inside the margin of sameness: 1 / M - 1 to M - 1
  else
    s.verdict = Verdict::ambiguous;
  return s;
}

}  // namespace

StrategyComparisons compare_strategies(const std::vector<Comparison>& rows, double min_effect) {
  std::map<std::string, std::vector<double>> by_strategy;
  std::vector<double> all;
  for (const Comparison& c : rows) {
    const double log_change = std::log1p(c.change);
    by_strategy[c.strategy].push_back(log_change);
    all.push_back(log_change);
  }
  StrategyComparisons out;
  out.whole_run = summarize_changes(all, min_effect);
  std::vector<double> strategy_medians;
  for (const auto& entry : by_strategy) strategy_medians.push_back(median(entry.second));
  const std::optional<double> log_drift =
      by_strategy.size() >= kMinStrategiesForDrift ? std::optional<double>(median(strategy_medians)) : std::nullopt;
  if (log_drift) out.drift = std::expm1(*log_drift);
  for (const auto& [strategy, changes] : by_strategy) {
    StrategyComparison s;
    s.strategy = strategy;
    s.change = summarize_changes(changes, min_effect);
    if (log_drift) {
      std::vector<double> beyond;
      for (double c : changes) beyond.push_back(c - *log_drift);
      s.against_run = summarize_changes(beyond, min_effect);
    }
    out.strategies.push_back(s);
  }
  return out;
}

}  // namespace condbench::report
