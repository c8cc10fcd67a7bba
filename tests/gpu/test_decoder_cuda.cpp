// The decoder's CUDA strategies (docs/design.md §8) against the cache-free double-precision
// reference, as tests/test_decoder.cpp checks the CPU ones: batch 1, 4 and 16, every token forced
// to each exit and two calibrated mixes, on tokens, exit ids, logits and counters; the same on a
// decoder whose last segment is shorter. Skipped where no GPU is.
#include <gtest/gtest.h>

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

INSTANTIATE_TEST_SUITE_P(Batches, CudaDecoder, ::testing::Values(1, 4, 16),
                         [](const auto& p) { return "batch" + std::to_string(p.param); });

}  // namespace
}  // namespace condbench::testing
