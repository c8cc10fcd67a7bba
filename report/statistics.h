#pragma once
// Statistics over the repetitions of one benchmark: plain functions over a vector of samples.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace condbench::report {

double median(std::vector<double> samples);
// Linear-interpolated quantile, q in [0, 1] (the definition numpy calls "linear").
double quantile(std::vector<double> samples, double q);
double mean(const std::vector<double>& samples);
// Sample standard deviation / mean.
double coefficient_of_variation(const std::vector<double>& samples);

// A distribution-free confidence interval of the median: the order statistics x(k) and x(n+1-k) of
// the sorted samples cover the true median with probability 1 - 2 P(Binomial(n, 1/2) < k), for
// any distribution. k is the largest that reaches `confidence`; when even [min, max] falls short
// (fewer than 6 samples for 95%), the interval is [min, max] and `confidence` says what it reaches:
// 93.75% with 5 samples, 75% with 3, 0 with 1.
struct MedianInterval {
  double low = std::nan(""), high = std::nan("");
  double confidence = 0;  // achieved, not asked for
};
constexpr double kIntervalConfidence = 0.95;
MedianInterval median_interval(std::vector<double> samples, double confidence = kIntervalConfidence);
// P(Binomial(n, 1/2) <= k).
double binomial_half_cdf(int n, int k);
// Two intervals share a point. Missing intervals (NaN) overlap everything: no evidence of a gap.
bool intervals_overlap(const MedianInterval& a, const MedianInterval& b);

// The Mann-Whitney U test of google/benchmark's tools/compare.py (scipy.stats.mannwhitneyu,
// two-sided): exact distribution when both samples have fewer than 8 values and no ties, else the
// normal approximation with tie correction and continuity correction.
struct UTest {
  double u = 0;        // U of the first sample
  double p_value = 1;  // two-sided
  bool exact = false;
};
// nullopt when either sample has fewer than kMinRepetitions values: too few to test.
constexpr size_t kMinRepetitions = 2;
std::optional<UTest> mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);
// The smallest two-sided p value the U test can give for samples of these sizes, 2 / C(n1 + n2, n1)
// (complete separation, no ties): when it is not below the significance level, no data could
// show a difference, so the test is not worth running.
double smallest_u_test_p(size_t n1, size_t n2);

}  // namespace condbench::report
