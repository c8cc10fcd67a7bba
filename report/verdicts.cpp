// A cell from a series' repetitions, and the verdict rule: two cells judged against each other
// (judge), and whether more repetitions could still decide them (could_decide).
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

Cell make_cell(const std::vector<double>& times_us, double unstable_cv) {
  Cell c;
  c.median_us = median(times_us);
  c.q1_us = quantile(times_us, 0.25);
  c.q3_us = quantile(times_us, 0.75);
  c.cv = coefficient_of_variation(times_us);
  c.repetitions = times_us.size();
  c.interval = median_interval(times_us);
  c.unstable = c.cv > unstable_cv;
  c.outliers = count_outliers(times_us);
  c.times_us = times_us;
  return c;
}

double rule_drift(const Cell& a, const Cell& b) {
  if (!a.interleaved || !b.interleaved) return kDriftBetweenProcesses;
  if (a.file == b.file) return 1.0;
  if (!a.lockstep.empty() && a.lockstep == b.lockstep) return std::max(a.lockstep_allowance, b.lockstep_allowance);
  return kDriftBetweenProcesses;
}

double drift_allowance(const Cell& a, const Cell& b) {
  return std::max({rule_drift(a, b), a.measured_drift, b.measured_drift});
}

const char* to_string(Bound bound) {
  switch (bound) {
    case Bound::cpu:
      return "cpu";
    case Bound::host:
      return "host";
    case Bound::device:
      return "device";
  }
  return "?";
}

const char* to_string(Standing standing) {
  switch (standing) {
    case Standing::faster:
      return "faster";
    case Standing::same:
      return "same";
    case Standing::ambiguous:
      return "ambiguous";
  }
  return "?";
}

double look_confidence(size_t looks) {
  return 1.0 - (1.0 - kRatioConfidence) / static_cast<double>(std::max<size_t>(looks, 1));
}

double answer_confidence(const Cell& a, const Cell& b) { return look_confidence(std::max(a.looks, b.looks)); }

Judgement judge_at(const Cell& a, const Cell& b, double drift, double min_effect) {
  Judgement j;
  j.first_faster = a.median_us <= b.median_us;
  const Cell& fast = j.first_faster ? a : b;
  const Cell& slow = j.first_faster ? b : a;
  j.confidence = answer_confidence(a, b);
  j.ratio = ratio_interval(fast.times_us, slow.times_us, j.confidence);
  j.drift = drift;
  j.outliers = a.outliers + b.outliers;
  if (!j.ratio.bounded()) return j;  // ambiguous: too few repetitions for an interval
  const double lower = j.ratio.low / j.drift, upper = j.ratio.high * j.drift;
  if (lower >= 1.0 + min_effect) {
    j.standing = Standing::faster;
    j.factor = lower;
  } else if (lower * kEquivalenceMargin >= 1.0 && upper <= kEquivalenceMargin) {
    j.standing = Standing::same;
  } else {
    j.detectable = (1.0 + min_effect) * j.drift * std::max(1.0, j.ratio.median) / j.ratio.low;
    j.cannot_exclude = std::max(upper, 1.0 / lower);
  }
  return j;
}

Judgement judge(const Cell& a, const Cell& b, double min_effect) {
  Judgement j = judge_at(a, b, drift_allowance(a, b), min_effect);
  const double rule = rule_drift(a, b);
  j.drift_measured = j.drift > rule;
  if (j.drift_measured) {
    const Standing by_rule = judge_at(a, b, rule, min_effect).standing;
    if (by_rule != j.standing) {
      j.withheld = by_rule;
      const Cell& by = a.measured_drift >= b.measured_drift ? a : b;
      j.withheld_by = by.drift_shown_by;
    }
  }
  return j;
}

bool could_decide(const Judgement& j, double min_effect) {
  if (j.standing != Standing::ambiguous || !j.ratio.valid) return false;
  if (!j.ratio.bounded() || j.outliers > 0) return true;
  const double point = j.ratio.median;
  const bool may_be_faster = j.ratio.high / j.drift >= 1.0 + min_effect;
  const bool may_be_same = point * j.drift < kEquivalenceMargin && point / j.drift * kEquivalenceMargin > 1.0;
  return may_be_faster || may_be_same;
}

}  // namespace condbench::report
