// Scenarios: forced exits, the mix targets, and calibration realising them on the pool (docs/design.md §3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "condbench/error.h"
#include "condbench/scenario.h"
#include "condbench/workload.h"
#include "reference.h"

namespace condbench::testing {
namespace {

TEST(Scenario, MixTargetsForThreeBlocksAreTheDesignNumbers) {
  const std::vector<double> early = mix_target_shares("early", 4), late = mix_target_shares("late", 4),
                            uniform = mix_target_shares("uniform", 4);
  const double want_early[] = {0.70, 0.20, 0.05, 0.05}, want_late[] = {0.05, 0.05, 0.20, 0.70};
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(early[k], want_early[k], 1e-12);
    EXPECT_NEAR(late[k], want_late[k], 1e-12);
    EXPECT_NEAR(uniform[k], 0.25, 1e-12);
  }
}

TEST(Scenario, MixTargetsKeepTheirShapeAtOtherDepths) {
  for (int exits : {2, 5, 13}) {
    const std::vector<double> early = mix_target_shares("early", exits), late = mix_target_shares("late", exits);
    EXPECT_NEAR(std::accumulate(early.begin(), early.end(), 0.0), 1.0, 1e-12);
    EXPECT_GT(early.front(), early.back());
    EXPECT_GT(late.back(), late.front());
    for (int k = 0; k < exits; ++k) EXPECT_NEAR(early[k], late[exits - 1 - k], 1e-12);  // mirror images
  }
  // 13 exits: the first quarter of the exits (3.25 bins) carries 70%.
  const std::vector<double> early13 = mix_target_shares("early", 13);
  EXPECT_NEAR(early13[0], 0.70 * 4.0 / 13.0, 1e-12);
}

TEST(Scenario, ForcedThresholdsFireExactlyAtK) {
  EXPECT_EQ(forced_thresholds(3, 1), (std::vector<float>{0.0f, 1.0f, 1.0f}));
  EXPECT_EQ(forced_thresholds(3, 3), (std::vector<float>{1.0f, 1.0f, 0.0f}));
  EXPECT_EQ(forced_thresholds(3, 4), (std::vector<float>{1.0f, 1.0f, 1.0f}));
}

TEST(Scenario, ParsedOnceAndPassedAsAValue) {
  const std::vector<Scenario> all = all_scenarios(3);
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all.front().str(), "exit:1");
  EXPECT_EQ(all.back().str(), "mix:late");
  const Scenario four = Scenario::parse("exit:4");
  EXPECT_EQ(four.kind(), ScenarioKind::forced_exit);
  EXPECT_EQ(four.forced_exit(), 4);
  EXPECT_TRUE(four.fits(3));
  EXPECT_FALSE(Scenario::parse("exit:5").fits(3));  // exists, but not for 3 blocks
  EXPECT_EQ(Scenario::parse("mix:late").target_shares(3).size(), 4u);
  EXPECT_EQ(Scenario::parse("mix:late").target_shares(12).size(), 13u);
  EXPECT_EQ(Scenario::parse("mix:uniform"), Scenario::mix("uniform"));
  for (const char* bad : {"exit:0", "exit:x", "exit:", "exit:-1", "exit:1234567890", "mix:sideways", "late", ""})
    EXPECT_THROW(Scenario::parse(bad), Error) << bad;
  EXPECT_THROW(shared_workload(ModelSource{}, 64)->thresholds(Scenario::parse("exit:5")), Error);
}

// The realised histogram on the pool, with the thresholds calibrated on it, is within 3
// percentage points of every target — checked through a real strategy, not the
// calibration's own bookkeeping.
TEST(Calibration, RealisedHistogramIsWithinThreePointsOfTheTarget) {
  for (int blocks : {3, 12}) {
    ModelSource source;
    source.config.blocks = blocks;
    const auto workload = shared_workload(source, 1024);
    const at::Tensor pool = workload->pool();
    const StrategyInfo* fused = StrategyRegistry::instance().find<StrategyInfo>(Device::cpu, Engine::native, "fused");
    ASSERT_NE(fused, nullptr);
    auto strategy = fused->make();
    strategy->prepare(workload->model(), pool.size(0));
    for (const char* shape : {"early", "uniform", "late"}) {
      const std::string name = std::string("mix:") + shape;
      const ExitOutput out = strategy->run(pool, workload->thresholds(Scenario::parse(name)));
      std::vector<double> share(blocks + 1, 0.0);
      for (int64_t r = 0; r < pool.size(0); ++r) share[out.exit_id[r].item<int>() - 1] += 1.0 / pool.size(0);
      const std::vector<double> target = mix_target_shares(shape, blocks + 1);
      for (int k = 0; k <= blocks; ++k)
        EXPECT_NEAR(share[k], target[k], 0.03) << name << " blocks=" << blocks << " exit " << k + 1;
    }
  }
}

TEST(Calibration, ThresholdsSplitAHandMadeConfidenceMatrix) {
  // 4 rows, 1 exit head; half should leave at exit 1, and the widest gap is there too.
  const std::vector<float> conf = {0.9f, 0.8f, 0.5f, 0.45f};
  const std::vector<float> t = calibrate_thresholds(conf, 4, 1, {0.5, 0.5});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FLOAT_EQ(t[0], 0.65f);
  EXPECT_EQ(exits_for(conf, 4, 1, t), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(calibrate_thresholds(conf, 4, 1, {0.0, 1.0})[0], 1.0f);  // nobody leaves early
  EXPECT_EQ(calibrate_thresholds(conf, 4, 1, {1.0, 0.0})[0], 0.0f);  // everybody does
}

TEST(Calibration, EachScenariosThresholdsAreMadeOnceAndTheScoresAskedForAtTheFirstMix) {
  int asked = 0;
  const std::vector<float> conf = {0.9f, 0.8f, 0.5f, 0.45f};  // 4 rows, 1 exit before the final one
  const ScenarioThresholds thresholds(1, [&] {
    ++asked;
    return conf;
  });
  EXPECT_EQ(thresholds(Scenario::parse("exit:2")), forced_thresholds(1, 2));
  EXPECT_EQ(asked, 0);  // a forced exit needs no scores
  const std::vector<float>& mix = thresholds(Scenario::parse("mix:uniform"));
  EXPECT_EQ(mix, calibrate_thresholds(conf, 4, 1, Scenario::parse("mix:uniform").target_shares(1)));
  EXPECT_EQ(&thresholds(Scenario::parse("mix:uniform")), &mix);  // kept, not made again
  thresholds(Scenario::parse("mix:late"));
  EXPECT_EQ(asked, 1);  // the scores once, for every mix
  try {
    thresholds(Scenario::parse("exit:3"));
    FAIL() << "exit:3 of a model with 2 exits";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "scenario 'exit:3': exit must be 1..2: the model has 2 exits");
  }
}

TEST(Calibration, TheCutMovesToTheWidestNearbyGap) {
  // 400 rows with confidences 0.001 apart, except one wide gap two rows past the target rank.
  std::vector<float> conf;
  for (int r = 0; r < 400; ++r) conf.push_back(0.9f - 0.001f * r - (r >= 202 ? 0.05f : 0.0f));
  const std::vector<float> t = calibrate_thresholds(conf, 400, 1, {0.5, 0.5});
  EXPECT_FLOAT_EQ(t[0], 0.5f * (conf[201] + conf[202]));  // 202 rows fire instead of 200
  EXPECT_EQ(exits_for(conf, 400, 1, t)[201], 1);
  EXPECT_EQ(exits_for(conf, 400, 1, t)[202], 2);
}

TEST(Scenario, InterleavedOrderKeepsEveryPrefixCloseToTheShares) {
  // 10 rows: 6 leave at exit 1, 3 at exit 2, 1 at exit 3.
  const std::vector<int> exits = {1, 1, 1, 1, 1, 1, 2, 2, 2, 3};
  const std::vector<int64_t> order = interleaved_order(exits, 3);
  EXPECT_EQ(order, (std::vector<int64_t>{0, 6, 1, 2, 7, 3, 9, 4, 8, 5}));
  std::vector<int> counts(3, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    ++counts[exits[order[i]] - 1];
    for (int k = 0; k < 3; ++k) EXPECT_LE(std::abs(counts[k] - (i + 1) * (k == 0 ? 0.6 : k == 1 ? 0.3 : 0.1)), 1.0);
  }
}

TEST(Workload, MixBatchesHoldTheCalibratedShares) {
  const auto w = shared_workload(ModelSource{}, 64);
  const std::vector<at::Tensor> batches = w->batches_for(Scenario::mix("early"));
  ASSERT_EQ(batches.size(), 16u);
  const std::vector<float> t = w->thresholds(Scenario::mix("early"));
  for (const at::Tensor& b : batches) {
    const at::Tensor conf = w->model()->exit_confidences(b).contiguous();
    const std::vector<int> exits =
        exits_for(std::vector<float>(conf.data_ptr<float>(), conf.data_ptr<float>() + conf.numel()), 64, 3, t);
    const double early = std::count(exits.begin(), exits.end(), 1) / 64.0;
    EXPECT_NEAR(early, 0.70, 2.0 / 64);  // each batch, not just the pool, is 70% early
  }
  EXPECT_TRUE(w->batches_for(Scenario::forced(2))[3].equal(w->batches()[3]));  // forced: pool order
}

TEST(Workload, PoolIsSeededAndWalkedInWholeBatches) {
  const auto a = shared_workload(ModelSource{}, 64), b = shared_workload(ModelSource{}, 1);
  EXPECT_EQ(a->pool().size(0), kMinPoolRows);
  EXPECT_EQ(a->batches().size(), 16u);
  EXPECT_EQ(b->batches().size(), 1024u);
  EXPECT_TRUE(a->pool().equal(b->pool()));  // the same inputs whatever the batch
  EXPECT_EQ(a->thresholds(Scenario::mix("early")), b->thresholds(Scenario::mix("early")));
}

}  // namespace
}  // namespace condbench::testing
