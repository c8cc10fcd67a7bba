#pragma once
// Statistics over the repetitions of one benchmark: plain functions over a vector of samples.
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace condbench::report {

double median(std::vector<double> samples);
// Linear-interpolated quantile, q in [0, 1] (the definition numpy calls "linear").
double quantile(std::vector<double> samples, double q);
double mean(const std::vector<double>& samples);
// Sample standard deviation / mean.
double coefficient_of_variation(const std::vector<double>& samples);

// The repetitions of a cell far outside its own spread: those whose log time lies more than
// kOutlierSpreads robust standard deviations (1.4826 x the median absolute deviation of the log times,
// which one wild repetition cannot move) from the log of the median, and more than kOutlierFloor away
// from the median either way (so a cell whose repetitions agree to 0.1% does not flag a 1% one). A busy
// moment of the machine during one repetition is what it finds; the report counts them beside the cell
// and never drops one.
constexpr double kOutlierSpreads = 5;
constexpr double kOutlierFloor = 1.25;
size_t count_outliers(const std::vector<double>& samples);

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
// The ratio slow / fast of two cells' times with a distribution-free confidence interval: the
// k-th smallest and k-th largest of the n1 x n2 pairwise ratios slow_j / fast_i, k the largest
// with P(U < k) <= (1 - confidence) / 2 under the rank-sum null distribution of U (exact for
// n1 x n2 <= kExactUPairs, the normal approximation above, which errs towards a smaller k: a wider
// interval). It is the interval of a shift in the
// logarithm (Hodges-Lehmann / Bauer), valid for any continuous distribution of the two cells' noise
// alike. With 5 and 5 samples at 99% it is [min(slow) / max(fast), max(slow) / min(fast)]. Too few
// samples to reach `confidence` (at 99%: C(n1 + n2, n1) under 200, as with 4 and 4 or 3 and 6)
// give [0, inf]: no bound at all; so does a time that is not positive and finite (`valid` false).
struct RatioInterval {
  double low = 0, high = std::numeric_limits<double>::infinity();
  double median = std::nan("");  // of the pairwise ratios: the point estimate
  size_t k = 0;                  // the order statistic used; 0 when there is none
  bool valid = true;             // false: a time was zero, negative or not finite
  bool bounded() const { return k > 0; }
};
constexpr double kRatioConfidence = 0.99;
constexpr size_t kExactUPairs = 2500;
// Samples larger than this are thinned to this many evenly spaced order statistics first, so a
// crafted file with huge repetition counts costs at most kMaxRatioSamples^2 ratios.
constexpr size_t kMaxRatioSamples = 2000;
RatioInterval ratio_interval(const std::vector<double>& fast, const std::vector<double>& slow,
                             double confidence = kRatioConfidence);
// The largest k with P(U <= k - 1) <= tail for samples of sizes n1 and n2 (0 when even U = 0 is
// more likely than `tail`).
size_t rank_sum_order(size_t n1, size_t n2, double tail);

}  // namespace condbench::report
