#include "statistics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

namespace condbench::report {

double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return std::nan("");
  std::sort(samples.begin(), samples.end());
  const double position = q * static_cast<double>(samples.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, samples.size() - 1);
  return samples[below] + (position - static_cast<double>(below)) * (samples[above] - samples[below]);
}

double median(std::vector<double> samples) { return quantile(std::move(samples), 0.5); }

double mean(const std::vector<double>& samples) {
  if (samples.empty()) return std::nan("");
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double coefficient_of_variation(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0.0;
  const double m = mean(samples);
  double sum = 0;
  for (double s : samples) sum += (s - m) * (s - m);
  return std::sqrt(sum / static_cast<double>(samples.size() - 1)) / m;
}

size_t count_outliers(const std::vector<double>& samples) {
  std::vector<double> logs;
  for (double s : samples)
    if (s > 0 && std::isfinite(s)) logs.push_back(std::log(s));
  if (logs.size() < 3) return 0;  // no spread to stand outside of
  const double centre = median(logs);
  std::vector<double> deviations;
  for (double l : logs) deviations.push_back(std::abs(l - centre));
  const double bound = std::max(kOutlierSpreads * 1.4826 * median(deviations), std::log(kOutlierFloor));
  return static_cast<size_t>(
      std::count_if(logs.begin(), logs.end(), [&](double l) { return std::abs(l - centre) > bound; }));
}

double binomial_half_cdf(int n, int k) {
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  // Terms C(n, i) / 2^n through logarithms, so large n does not overflow.
  double sum = 0;
  for (int i = 0; i <= k; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  return std::min(1.0, sum);
}

MedianInterval median_interval(std::vector<double> samples, double confidence) {
  MedianInterval interval;
  const int n = static_cast<int>(samples.size());
  if (n == 0) return interval;
  std::sort(samples.begin(), samples.end());
  // [x(k), x(n+1-k)] holds the median with probability 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2):
  // the narrowest k still at `confidence`. P(B <= k-1) is summed term by term as k grows (as
  // binomial_half_cdf sums it, in the same order), so the walk is linear in n, not quadratic: a
  // hostile file of 300k repetitions of one cell costs a sort, not minutes.
  const double log_total = std::lgamma(n + 1.0) - n * std::log(2.0);
  const auto term = [&](int i) { return std::exp(log_total - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0)); };
  int k = 1;               // [min, max]: the widest there is
  double below = term(0);  // P(B <= k-1)
  while (k + 1 <= (n + 1) / 2) {
    const double next = below + term(k);  // P(B <= k): the coverage of k + 1
    if (1.0 - 2.0 * std::min(1.0, next) < confidence) break;
    below = next;
    ++k;
  }
  interval.low = samples[k - 1];
  interval.high = samples[n - k];
  interval.confidence = std::max(0.0, 1.0 - 2.0 * std::min(1.0, below));
  return interval;
}

namespace {

// Number of ways to pick `n1` of `n1 + n2` ranks with rank sum giving U = u, for every u:
// the exact null distribution of U without ties. counts(i, j)[u], the arrangements of i values of
// the first sample and j of the second with U = u, from counts(i - 1, j) and counts(i, j - 1): the
// largest value belongs to the first sample (it beats all j of the second) or not. Two rows of j
// at a time: O(n2 n1 n2) memory, O(n1 n2 n1 n2) time.
std::vector<double> exact_u_counts(size_t n1, size_t n2) {
  std::vector<std::vector<double>> previous(n2 + 1, std::vector<double>{1.0});  // i = 0: U = 0 only
  for (size_t i = 1; i <= n1; ++i) {
    std::vector<std::vector<double>> row(n2 + 1);
    row[0] = {1.0};
    for (size_t j = 1; j <= n2; ++j) {
      std::vector<double>& c = row[j];
      c.assign(i * j + 1, 0.0);
      const std::vector<double>& first_largest = previous[j];  // counts(i - 1, j), shifted by j
      const std::vector<double>& second_largest = row[j - 1];  // counts(i, j - 1)
      for (size_t u = 0; u < first_largest.size(); ++u) c[u + j] += first_largest[u];
      for (size_t u = 0; u < second_largest.size(); ++u) c[u] += second_largest[u];
    }
    previous = std::move(row);
  }
  return previous[n2];
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

size_t rank_sum_order(size_t n1, size_t n2, double tail) {
  if (n1 == 0 || n2 == 0 || !(tail > 0)) return 0;
  const size_t pairs = n1 * n2;
  if (pairs <= kExactUPairs) {
    // A report judges thousands of pairs of a few sizes: each size is counted once.
    static std::mutex mutex;
    static std::map<std::tuple<size_t, size_t, double>, size_t> known;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_tuple(std::min(n1, n2), std::max(n1, n2), tail);
    if (const auto it = known.find(key); it != known.end()) return it->second;
    const std::vector<double> counts = exact_u_counts(std::get<0>(key), std::get<1>(key));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double below = 0;
    size_t k = 0;
    while (k < counts.size() && (below + counts[k]) / total <= tail) below += counts[k++];
    return known[key] = k;
  }
  // Normal approximation with continuity correction: P(U <= k - 1) = Phi((k - 1 + 0.5 - mean) / sd).
  const double mean_u = static_cast<double>(pairs) / 2.0;
  const double sd = std::sqrt(static_cast<double>(pairs) * static_cast<double>(n1 + n2 + 1) / 12.0);
  double lo = -40, hi = 0;  // the tail's quantile of the standard normal, by bisection
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < tail ? lo : hi) = mid;
  }
  const double k = std::floor(mean_u - 0.5 + lo * sd) + 1;
  return k <= 0 ? 0 : std::min(static_cast<size_t>(k), pairs / 2);
}

namespace {

// At most kMaxRatioSamples evenly spaced order statistics of `samples`, sorted.
std::vector<double> thinned(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  if (samples.size() <= kMaxRatioSamples) return samples;
  std::vector<double> out(kMaxRatioSamples);
  for (size_t i = 0; i < kMaxRatioSamples; ++i) out[i] = samples[i * (samples.size() - 1) / (kMaxRatioSamples - 1)];
  return out;
}

}  // namespace

RatioInterval ratio_interval(const std::vector<double>& fast, const std::vector<double>& slow, double confidence) {
  RatioInterval r;
  const auto usable = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x > 0 && std::isfinite(x); });
  };
  if (fast.empty() || slow.empty()) return r;
  if (!usable(fast) || !usable(slow)) {
    r.valid = false;
    return r;
  }
  const std::vector<double> a = thinned(fast), b = thinned(slow);
  std::vector<double> ratios;
  ratios.reserve(a.size() * b.size());
  for (double y : b)
    for (double x : a) ratios.push_back(y / x);
  r.median = median(ratios);
  r.k = rank_sum_order(a.size(), b.size(), (1.0 - confidence) / 2.0);
  if (r.k == 0) return r;
  const auto kth = [&ratios](size_t i) {
    std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(i), ratios.end());
    return ratios[i];
  };
  r.low = kth(r.k - 1);
  r.high = kth(ratios.size() - r.k);
  return r;
}

}  // namespace condbench::report
