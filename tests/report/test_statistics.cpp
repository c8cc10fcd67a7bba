// condbench-report's statistics (report/statistics.cpp): quantiles and spread with hand-checked
// values, the median's interval and its order statistics, the interval of a ratio.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "analysis.h"
#include "statistics.h"

namespace condbench::report {
namespace {

TEST(Statistics, MedianQuantileAndSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.25), 1.75);
  // mean 2, sample sd 1: cv 0.5
  EXPECT_DOUBLE_EQ(coefficient_of_variation({1, 2, 3}), 0.5);
}

TEST(RatioInterval, OrderStatisticsOfThePairwiseRatios) {
  // 5 and 5 at 99%: P(U = 0) = 1/252 <= 0.005 < P(U <= 1) = 2/252, so k = 1: [min/max, max/min].
  EXPECT_EQ(rank_sum_order(5, 5, 0.005), 1u);
  EXPECT_EQ(rank_sum_order(4, 4, 0.005), 0u);  // 1/70
  EXPECT_EQ(rank_sum_order(3, 3, 0.005), 0u);  // 1/20
  // Exact counts, checked against an independent enumeration of the rank-sum null distribution.
  EXPECT_EQ(rank_sum_order(10, 10, 0.005), 17u);
  EXPECT_EQ(rank_sum_order(12, 12, 0.005), 28u);
  EXPECT_EQ(rank_sum_order(5, 10, 0.005), 5u);
  EXPECT_EQ(rank_sum_order(20, 20, 0.005), 106u);
  EXPECT_EQ(rank_sum_order(25, 25, 0.005), 181u);
  EXPECT_EQ(rank_sum_order(50, 50, 0.005), 878u);
  // Unbalanced samples are counted exactly too: P(U <= k - 1) = k / 402 with one value against 401.
  EXPECT_EQ(rank_sum_order(2, 201, 0.005), 19u);
  EXPECT_EQ(rank_sum_order(1, 401, 0.005), 2u);
  // 60 and 60 (3600 pairs) take the normal approximation: the exact order is 1311; the approximation
  // must not exceed it (a narrower interval than the exact one), and stays close.
  EXPECT_LE(rank_sum_order(60, 60, 0.005), 1311u);
  EXPECT_GE(rank_sum_order(60, 60, 0.005), 1305u);

  const RatioInterval r = ratio_interval({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_EQ(r.k, 1u);
  EXPECT_DOUBLE_EQ(r.low, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(r.high, 10.0 / 1.0);
  EXPECT_FALSE(ratio_interval({1, 2, 3}, {6, 7, 8}).bounded());
  EXPECT_TRUE(ratio_interval({1, 2, 3}, {6, 7, 8}).valid);  // too few, not invalid
  for (const double bad : {0.0, -1.0, double(NAN), double(INFINITY)}) {
    const RatioInterval r = ratio_interval({1, 2, 3, 4, bad}, {6, 7, 8, 9, 10});
    EXPECT_FALSE(r.bounded());
    EXPECT_FALSE(r.valid);
  }
  // and the verdict says why, not "too few"
  Cell zero = make_cell({1, 2, 3, 4, 0}), fine = make_cell({6, 7, 8, 9, 10});
  zero.interleaved = fine.interleaved = true;
  EXPECT_EQ(verdict_text(judge(zero, fine), "a", "b", zero, fine),
            "ambiguous between a and b: a repetition's time is zero, negative or not a number");
  // A crafted file's huge repetition counts are thinned, not multiplied out: 10^5 x 10^5 samples.
  std::vector<double> many(100000), more(100000);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i] = 1.0 + static_cast<double>(i % 997) / 1e4;
    more[i] = 3.0 + static_cast<double>(i % 991) / 1e4;
  }
  const RatioInterval big = ratio_interval(many, more);
  EXPECT_TRUE(big.bounded());
  EXPECT_GT(big.low, 2.7);
  EXPECT_LT(big.high, 3.2);
}

TEST(MedianIntervalTest, OrderStatisticsAndTheConfidenceTheyReach) {
  // 5 samples: even [min, max] reaches only 1 - 2/32 = 93.75%; the interval says so.
  MedianInterval i = median_interval({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(i.low, 1.0);
  EXPECT_DOUBLE_EQ(i.high, 5.0);
  EXPECT_DOUBLE_EQ(i.confidence, 1.0 - 2.0 / 32.0);
  // 6 samples: [min, max] at 1 - 2/64.
  i = median_interval({1, 2, 3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(i.low, 1.0);
  EXPECT_DOUBLE_EQ(i.high, 6.0);
  EXPECT_DOUBLE_EQ(i.confidence, 1.0 - 2.0 / 64.0);
  // 9 samples: x(2)..x(8) covers with 1 - 2 (1 + 9) / 512 = 96.1%; x(3)..x(7) would be 82%.
  i = median_interval({9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(i.low, 2.0);
  EXPECT_DOUBLE_EQ(i.high, 8.0);
  EXPECT_NEAR(i.confidence, 1.0 - 2.0 * 10.0 / 512.0, 1e-12);
  // 20 samples: P(Bin(20, 1/2) <= 5) = 21700 / 2^20, so x(6)..x(15).
  std::vector<double> twenty;
  for (int v = 1; v <= 20; ++v) twenty.push_back(v);
  i = median_interval(twenty);
  EXPECT_DOUBLE_EQ(i.low, 6.0);
  EXPECT_DOUBLE_EQ(i.high, 15.0);
  EXPECT_NEAR(i.confidence, 1.0 - 2.0 * 21700.0 / 1048576.0, 1e-12);
  // One sample says nothing about its median's spread.
  i = median_interval({3});
  EXPECT_DOUBLE_EQ(i.low, 3.0);
  EXPECT_DOUBLE_EQ(i.confidence, 0.0);
  EXPECT_TRUE(std::isnan(median_interval({}).low));
  EXPECT_NEAR(binomial_half_cdf(20, 5), 21700.0 / 1048576.0, 1e-15);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(4, 4), 1.0);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(4, -1), 0.0);
}

TEST(MedianIntervalTest, TheNarrowestOrderStatisticsAtTheConfidenceForEverySize) {
  // The linear walk against the definition: x(k)..x(n+1-k) for the largest k whose coverage
  // 1 - 2 P(B <= k-1) is still at the confidence.
  for (int n = 1; n <= 300; ++n) {
    std::vector<double> samples;
    for (int v = n; v >= 1; --v) samples.push_back(v);
    const MedianInterval got = median_interval(samples, 0.99);
    int k = 1;
    while (k + 1 <= (n + 1) / 2 && 1.0 - 2.0 * binomial_half_cdf(n, k) >= 0.99) ++k;
    ASSERT_DOUBLE_EQ(got.low, k) << "n=" << n;
    ASSERT_DOUBLE_EQ(got.high, n + 1 - k) << "n=" << n;
    ASSERT_NEAR(got.confidence, std::max(0.0, 1.0 - 2.0 * binomial_half_cdf(n, k - 1)), 1e-12) << "n=" << n;
  }
  // A hostile file's 300,000 repetitions of one cell: the normal approximation's k, to a few ranks
  // (n/2 - 2.5758 sqrt(n)/2 = 149,295), at just over 99%.
  std::vector<double> many(300000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i + 1);
  const MedianInterval wide = median_interval(many, 0.99);
  EXPECT_NEAR(wide.low, 149295, 3);
  EXPECT_DOUBLE_EQ(wide.high, 300001 - wide.low);
  EXPECT_GE(wide.confidence, 0.99);
  EXPECT_LT(wide.confidence, 0.9905);
}

}  // namespace
}  // namespace condbench::report
