// The decoder's CUDA strategies (docs/design.md §8) against the cache-free double-precision
// reference, as tests/test_decoder.cpp checks the CPU ones: batch 1, 4 and 16, every token forced
// to each exit and two calibrated mixes, on tokens, exit ids, logits and counters; the same on a
// decoder whose last segment is shorter. Skipped where no GPU is.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "condbench/cuda/stuck_condition.h"
#include "decoder_check.h"
#include "gpu_test_support.h"

namespace condbench::testing {
namespace {

class CudaDecoder : public ::testing::TestWithParam<int64_t> {};

TEST_P(CudaDecoder, MatchesTheReferenceAtEveryForcedExitAndInMixes) {
  skip_without_gpu();
  const int64_t batch = GetParam();
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  const std::vector<DecoderCase> cases = decoder_cases(c, params);
  const std::vector<const DecoderStrategyInfo*> strategies = decoder_strategies_on(Device::cuda);
  ASSERT_FALSE(strategies.empty());
  for (const DecoderStrategyInfo* info : strategies)
    for (const DecoderCase& scenario : cases) {
      const DecoderSeen seen = check_decoder(*info, c, params, batch, scenario);
      if (!seen.ran) continue;
      if (scenario.name.starts_with("exit:"))
        EXPECT_EQ(seen.exits, std::set<int>{std::stoi(scenario.name.substr(5))}) << info->key() << " " << scenario.name;
    }
}

// Five layers, exits after 2 and 4: the last segment is one layer where the others are two (the
// graphs' segments and the loop's counter must not assume equal ones).
TEST_P(CudaDecoder, MatchesTheReferenceWhenTheLastSegmentIsShorter) {
  skip_without_gpu();
  const DecoderConfig c = odd_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 9);
  for (const DecoderStrategyInfo* info : decoder_strategies_on(Device::cuda))
    for (const DecoderCase& scenario : decoder_cases(c, params)) check_decoder(*info, c, params, GetParam(), scenario);
}

// The check of skipping can fail: with graph_cond's IF-ELSE after exit test `level` held on its
// first branch (cuda::testing::StuckCondition, at capture), a step whose rows all leave at exit
// level + 1 runs the next segment for nothing — its tokens, exits and logits still right (the rows
// that left stay frozen, and a full layer writes the keys and values the projection would) — and
// only the counters show it: one segment's layers and one head too many.
TEST_P(CudaDecoder, AnIfElseHeldOnItsFirstBranchIsCaught) {
  skip_without_gpu();
  const int64_t batch = GetParam();
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  const at::Tensor prompt = decoder_prompts(c, batch, 11).to(at::kCUDA);
  const at::Tensor input = prompt.select(1, c.prompt - 1).contiguous();
  int checked = 0;
  for (const DecoderStrategyInfo* info : decoder_strategies_on(Device::cuda)) {
    if (info->name != "graph_cond") continue;  // the strategy whose IF-ELSE nodes hold the exits
    for (int level = 0; level + 1 < c.num_exits(); ++level) {
      SCOPED_TRACE(info->key() + ": the IF-ELSE after exit test " + std::to_string(level) + " held");
      std::unique_ptr<DecoderStrategy> strategy;
      {
        const cuda::testing::StuckCondition stuck(level);
        strategy = info->make();
        strategy->prepare({c, params}, batch);
      }
      strategy->start(prompt);
      const DecoderStrategy::Observed seen =
          strategy->observed_step(input, forced_decoder_case(c, level + 1).thresholds);
      const at::Tensor exits = seen.output->exit_id.to(at::kCPU, at::kInt);
      EXPECT_TRUE(exits.eq(level + 1).all().item<bool>()) << "every row still leaves at exit " << level + 1;
      const double rows = static_cast<double>(batch);
      EXPECT_EQ(seen.counters.layers_run, rows * c.exit_layer(level + 2)) << "one segment for nothing";
      EXPECT_EQ(seen.counters.heads_run, rows * (level + 2));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no decoder graph_cond on CUDA";
}

INSTANTIATE_TEST_SUITE_P(Batches, CudaDecoder, ::testing::Values(1, 4, 16),
                         [](const auto& p) { return "batch" + std::to_string(p.param); });

}  // namespace
}  // namespace condbench::testing
