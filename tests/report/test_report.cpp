// condbench-report's arithmetic: statistics with hand-checked values, tables, winners and the
// generated sentences from a small fixture (tests/report/fixtures/small.json).
#include <gtest/gtest.h>

#include <cmath>

#include "analysis.h"
#include "condbench/error.h"
#include "result_file.h"
#include "statistics.h"

namespace condbench::report {
namespace {

const std::string kFixture = std::string(CONDBENCH_REPORT_FIXTURES) + "/small.json";

TEST(Statistics, MedianQuantileAndSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.25), 1.75);
  // mean 2, sample sd 1: cv 0.5
  EXPECT_DOUBLE_EQ(coefficient_of_variation({1, 2, 3}), 0.5);
}

TEST(UTest, SeparatedSamplesExactTwoSided) {
  // No ties, 5 + 5 values: exact. U = 0; two-sided p = 2 / C(10, 5) = 2 / 252.
  const auto t = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->exact);
  EXPECT_DOUBLE_EQ(t->u, 0.0);
  EXPECT_NEAR(t->p_value, 2.0 / 252.0, 1e-12);
}

TEST(UTest, InterleavedSamplesExact) {
  // a = {1,3,5}, b = {2,4,6}: U_a = 3. Of the 20 arrangements, 7 have U >= 6: p = 2 * 7/20.
  const auto t = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->u, 3.0);
  EXPECT_NEAR(t->p_value, 0.7, 1e-12);
}

TEST(UTest, TiesUseTheNormalApproximationWithTieCorrection) {
  // a = {1,2,2,3}, b = {2,3,4,5}. Midranks: 1->1, 2->3 (x3), 3->5.5 (x2), 4->7, 5->8.
  // U_a = 12.5 - 10 = 2.5. Var = 16/12 * (9 - (24 + 6)/56) = 11.2857142857.
  // z = (13.5 - 8 - 0.5) / sqrt(Var) = 1.48835; p = 2 (1 - Phi(z)) = 0.136650 (worked by hand).
  const auto t = mann_whitney_u({1, 2, 2, 3}, {2, 3, 4, 5});
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->exact);
  EXPECT_DOUBLE_EQ(t->u, 2.5);
  const double z = 5.0 / std::sqrt(16.0 / 12.0 * (9.0 - 30.0 / 56.0));
  EXPECT_NEAR(t->p_value, std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(t->p_value, 0.13665, 5e-5);
}

TEST(UTest, AllEqualIsNoEvidenceAndTooFewIsNoTest) {
  const auto same = mann_whitney_u({1, 1, 1}, {1, 1, 1});
  ASSERT_TRUE(same);
  EXPECT_DOUBLE_EQ(same->p_value, 1.0);
  EXPECT_FALSE(mann_whitney_u({1}, {2, 3}));
}

TEST(ResultFileTest, ReadsRepetitionsCountersAndErrors) {
  const ResultFile f = load_result_file(kFixture);
  EXPECT_EQ(f.context.at("cpu_model"), "Test CPU");
  EXPECT_EQ(f.device_label("cpu"), "cpu · Test CPU");
  ASSERT_EQ(f.series.size(), 7u);  // six early_exit series and one skipped; the foreign one ignored
  const Series& eager = f.series[0];
  EXPECT_EQ(eager.strategy_key(), "torch/eager_host");
  EXPECT_EQ(eager.scenario, "mix:early");
  EXPECT_EQ(eager.batch, 1);
  EXPECT_EQ(eager.hidden, 64);
  EXPECT_EQ(eager.blocks, 3);
  EXPECT_EQ(eager.times_us, (std::vector<double>{10.0, 12.0, 11.0}));  // 12000 ns read as 12 us
  EXPECT_DOUBLE_EQ(eager.counters.at("host_syncs"), 1.4);
  EXPECT_EQ(f.series.back().error, "skipped: no CUDA device on this machine");
}

TEST(Analysis, TablesSpeedupsAndWinners) {
  const std::vector<Group> groups = make_groups({load_result_file(kFixture)});
  ASSERT_EQ(groups.size(), 1u);
  const Group& g = groups[0];
  EXPECT_EQ(g.device_label, "cpu · Test CPU");
  EXPECT_EQ(g.strategies, (std::vector<std::string>{"native/fused", "torch/eager_host", "torch/masked"}));
  EXPECT_EQ(g.scenarios, (std::vector<std::string>{"mix:early", "mix:late"}));
  EXPECT_DOUBLE_EQ(g.cell("torch/eager_host", "mix:early")->median_us, 11.0);
  EXPECT_DOUBLE_EQ(g.cell("native/fused", "mix:early")->median_us, 1.5);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("native/fused", "mix:early"), 11.0 / 1.5);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("torch/masked", "mix:early"), 11.0 / 21.0);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("native/fused", "mix:late"), 6.0);

  const std::vector<Winner> winners = best_strategies(groups);
  ASSERT_EQ(winners.size(), 2u);
  EXPECT_EQ(winners[0].scenario, "mix:early");
  EXPECT_EQ(winners[0].strategy, "native/fused");
  EXPECT_EQ(winners[0].runner_up, "torch/eager_host");
  EXPECT_DOUBLE_EQ(winners[0].margin, 11.0 / 1.5);
  EXPECT_EQ(winners[1].strategy, "native/fused");
  EXPECT_EQ(winners[1].runner_up, "torch/masked");
  EXPECT_DOUBLE_EQ(winners[1].margin, 21.0 / 5.0);
}

TEST(Analysis, SentencesAreGeneratedFromTheData) {
  const std::vector<std::string> sentences = recommendations(make_groups({load_result_file(kFixture)}));
  EXPECT_EQ(sentences, (std::vector<std::string>{
                           "At batch 1 (hidden 64, 3 blocks) on cpu · Test CPU, native/fused is 7.3× faster than "
                           "torch/eager_host when most rows exit early.",
                           "At batch 1 (hidden 64, 3 blocks) on cpu · Test CPU, native/fused is 6.0× faster than "
                           "torch/eager_host when most rows exit late."}));
  EXPECT_EQ(format_ratio(55.4), "55×");
  EXPECT_EQ(format_ratio(1.04), "1.0×");
  EXPECT_EQ(format_ratio(0.0213), "0.021×");
}

TEST(Analysis, CloseResultsAreCalledEvenNotAWin) {
  Group g;
  g.device_label = "cuda · X";
  g.batch = 1;
  g.hidden = 64;
  g.blocks = 3;
  g.strategies = {"native/graph_cond", "torch/eager_host"};
  g.scenarios = {"mix:late"};
  g.cells[{"native/graph_cond", "mix:late"}].median_us = 10.0;
  g.cells[{"torch/eager_host", "mix:late"}].median_us = 10.4;
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{
                                      "At batch 1 (hidden 64, 3 blocks) on cuda · X, native/graph_cond and "
                                      "torch/eager_host are within 5% of each other when most rows exit late."}));
  g.cells[{"torch/eager_host", "mix:late"}].median_us = 9.0;  // eager_host wins: named against the runner-up
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{
                                      "At batch 1 (hidden 64, 3 blocks) on cuda · X, torch/eager_host is the fastest "
                                      "when most rows exit late, 1.1× ahead of native/graph_cond."}));
}

TEST(Analysis, CompareGivesChangeTestAndVerdict) {
  ResultFile a, b;
  Series fast, slow, few;
  fast.name = "early_exit/x";
  fast.times_us = {10, 11, 12, 10.5, 11.5};
  slow = fast;
  slow.times_us = {20, 21, 22, 20.5, 21.5};
  few.name = "early_exit/y";
  few.times_us = {5};
  a.series = {fast, few};
  b.series = {slow, few};
  const std::vector<Comparison> rows = compare(a, b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].change, 10.0 / 11.0);
  EXPECT_NEAR(rows[0].test->p_value, 2.0 / 252.0, 1e-12);
  EXPECT_EQ(rows[0].verdict, Verdict::slower);
  EXPECT_EQ(rows[1].verdict, Verdict::too_few_repetitions);
  EXPECT_EQ(compare(b, a)[0].verdict, Verdict::faster);
  EXPECT_EQ(compare(a, a)[0].verdict, Verdict::same);
}

}  // namespace
}  // namespace condbench::report
