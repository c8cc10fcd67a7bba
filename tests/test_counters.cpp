// What each strategy says it did per inference, against what it must do (docs/design.md §2).
#include <gtest/gtest.h>

#include <algorithm>

#include "condbench/flops.h"
#include "condbench/workload.h"
#include "reference.h"

namespace condbench::testing {
namespace {

struct Observed {
  InferenceCounters counters;
  std::vector<int> exits;
  double useful = 0;
};

Observed run_once(Device device, Engine engine, const std::string& name, const Workload& w,
                  const std::vector<float>& thresholds, const at::Tensor& input) {
  const StrategyInfo* info = StrategyRegistry::instance().find(device, engine, name);
  EXPECT_NE(info, nullptr) << name;
  auto strategy = info->make();
  strategy->prepare(w.model(), input.size(0));
  const ExitOutput out = strategy->run(input, thresholds);
  strategy->finish();
  Observed seen;
  seen.counters = strategy->counters();
  const at::Tensor ids = out.exit_id.to(at::kCPU, at::kInt);
  for (int64_t r = 0; r < ids.numel(); ++r) {
    seen.exits.push_back(ids[r].item<int>());
    seen.useful += useful_flops(w.config(), seen.exits.back());
  }
  return seen;
}

class CountersTest : public ::testing::TestWithParam<std::string> {
 protected:
  static std::shared_ptr<const Workload> workload(int64_t batch) { return shared_workload(ModelSource{}, batch); }
};

TEST_P(CountersTest, EagerHostDecidesOnceOnTheHostPerExitTestReached) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    for (const at::Tensor& input : {w->batches()[0], w->batches()[1]}) {
      const Observed seen = run_once(Device::cpu, Engine::torch, "eager_host", *w, w->thresholds(GetParam()), input);
      const int deepest = *std::max_element(seen.exits.begin(), seen.exits.end());
      EXPECT_EQ(seen.counters.host_syncs, std::min(deepest, w->config().blocks)) << "batch " << batch;
      // compaction: each row's blocks and heads run once, up to its own exit
      EXPECT_DOUBLE_EQ(seen.counters.flops_executed, seen.useful);
    }
  }
}

TEST_P(CountersTest, MaskedRunsTheFullDepthAndNeverDecidesOnTheHost) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    const Observed seen =
        run_once(Device::cpu, Engine::torch, "masked", *w, w->thresholds(GetParam()), w->batches()[0]);
    EXPECT_EQ(seen.counters.host_syncs, 0);
    EXPECT_DOUBLE_EQ(seen.counters.flops_executed, batch * full_model_flops(w->config()));
    EXPECT_GT(seen.counters.launches, 0);
  }
}

TEST_P(CountersTest, FusedDoesOnlyUsefulWorkWithoutLaunches) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    const Observed seen =
        run_once(Device::cpu, Engine::native, "fused", *w, w->thresholds(GetParam()), w->batches()[0]);
    EXPECT_EQ(seen.counters.host_syncs, 0);
    EXPECT_EQ(seen.counters.launches, 0);
    EXPECT_DOUBLE_EQ(seen.counters.flops_executed, seen.useful);
  }
}

TEST_P(CountersTest, UsefulNeverExceedsExecuted) {
  for (const StrategyInfo* info : strategies_on(Device::cpu))
    for (int64_t batch : {1, 64}) {
      auto w = workload(batch);
      const Observed seen =
          run_once(info->device, info->engine, info->name, *w, w->thresholds(GetParam()), w->batches()[0]);
      EXPECT_LE(seen.useful, seen.counters.flops_executed) << info->key();
      EXPECT_GT(seen.useful, 0.0) << info->key();
    }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, CountersTest,
                         ::testing::Values("exit:1", "exit:2", "exit:4", "mix:early", "mix:uniform", "mix:late"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), ':', '_');
                           return name;
                         });

TEST(Flops, PathsAddUp) {
  ModelConfig config;  // 32 -> 64 x3, 10 classes
  const double block0 = 2.0 * 32 * 64, block = 2.0 * 64 * 64, head = 2.0 * 64 * 10;
  EXPECT_DOUBLE_EQ(useful_flops(config, 1), block0 + head);
  EXPECT_DOUBLE_EQ(useful_flops(config, 3), block0 + 2 * block + 3 * head);
  EXPECT_DOUBLE_EQ(useful_flops(config, 4), block0 + 2 * block + 4 * head);
  EXPECT_DOUBLE_EQ(full_model_flops(config), useful_flops(config, 4));
}

}  // namespace
}  // namespace condbench::testing
