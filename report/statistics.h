#pragma once
// Statistics over the repetitions of one benchmark: plain functions over a vector of samples.
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

}  // namespace condbench::report
