// What each strategy says it did per inference, against what it must do (docs/design.md §2).
#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

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
  const StrategyInfo* info = StrategyRegistry::instance().find<StrategyInfo>(device, engine, name);
  if (info == nullptr) throw std::invalid_argument("no strategy " + name);  // the test fails, not the binary
  auto strategy = info->make();
  strategy->prepare(w.model(), input.size(0));
  strategy->run(input, thresholds);  // steady state: what a benchmark's untimed pass observes
  strategy->finish();
  const Strategy::Observed observed = strategy->observed_run(input, thresholds);
  Observed seen;
  seen.counters = observed.counters;
  const at::Tensor ids = observed.output.exit_id.to(at::kCPU, at::kInt);
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
      const Observed seen =
          run_once(Device::cpu, Engine::torch, "eager_host", *w, w->thresholds(Scenario::parse(GetParam())), input);
      const int deepest = *std::max_element(seen.exits.begin(), seen.exits.end());
      EXPECT_EQ(seen.counters.host_syncs, std::min(deepest, w->config().blocks)) << "batch " << batch;
      // each decision reads one bool per row still active: at least one, and all of them the first time
      EXPECT_GE(seen.counters.bytes_read_back, seen.counters.host_syncs);
      EXPECT_LE(seen.counters.bytes_read_back, seen.counters.host_syncs * batch);
      if (batch == 1) EXPECT_EQ(seen.counters.bytes_read_back, seen.counters.host_syncs);
      // compaction: each row's blocks and heads run once, up to its own exit
      EXPECT_DOUBLE_EQ(seen.counters.flops_executed, seen.useful);
    }
  }
}

TEST_P(CountersTest, MaskedRunsTheFullDepthAndNeverDecidesOnTheHost) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    const Observed seen =
        run_once(Device::cpu, Engine::torch, "masked", *w, w->thresholds(Scenario::parse(GetParam())), w->batches()[0]);
    EXPECT_EQ(seen.counters.host_syncs, 0);
    EXPECT_DOUBLE_EQ(seen.counters.flops_executed, batch * full_model_flops(w->config()));
    // Counted, not assumed: per stage linear, relu, linear, softmax, amax, gt, unsqueeze and two
    // wheres, then the final linear — top-level ATen calls only (linear's own addmm is not a second
    // one). The hand-kept constant this replaced said 8 per stage: it forgot the unsqueeze (a view,
    // dispatched like any operator).
    EXPECT_EQ(seen.counters.launches, 9 * w->config().blocks + 1);
    EXPECT_FALSE(at::hasThreadLocalCallbacks());  // the observer is gone with the observed run
  }
}

TEST_P(CountersTest, FusedDoesOnlyUsefulWorkWithoutLaunches) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    const Observed seen =
        run_once(Device::cpu, Engine::native, "fused", *w, w->thresholds(Scenario::parse(GetParam())), w->batches()[0]);
    EXPECT_EQ(seen.counters.host_syncs, 0);
    EXPECT_EQ(seen.counters.launches, 0);
    EXPECT_DOUBLE_EQ(seen.counters.flops_executed, seen.useful);
  }
}

TEST_P(CountersTest, WhatEachStrategyDeclaresItsCountersShow) {
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    auto w = workload(info->unsupported(model_config("mlp"), 64) ? 1 : 64);  // aoti/cond takes one row
    const Observed seen = run_once(info->device, info->engine, info->name, *w,
                                   w->thresholds(Scenario::parse(GetParam())), w->batches()[0]);
    const int deepest = *std::max_element(seen.exits.begin(), seen.exits.end());
    EXPECT_EQ(seen.counters.host_syncs, info->host_decides ? std::min(deepest, w->config().blocks) : 0) << info->key();
    if (info->engine == Engine::torch) EXPECT_GT(seen.counters.launches, 0) << info->key();
  }
}

// Bytes: the weights of every stage some row reached, once whatever the batch, and the input.
TEST_P(CountersTest, BytesReadAreTheWeightsOfTheStagesRun) {
  for (int64_t batch : {1, 64}) {
    auto w = workload(batch);
    const ModelConfig& config = w->config();
    const at::Tensor& input = w->batches()[0];
    const double input_bytes = static_cast<double>(input.numel()) * sizeof(float);
    for (const auto& [engine, name] : {std::pair{Engine::native, "fused"},
                                       {Engine::torch, "eager_host"},
                                       {Engine::torch, "masked"},
                                       {Engine::aoti, "cond"},
                                       {Engine::aoti, "masked"}}) {
      if (StrategyRegistry::instance().find<StrategyInfo>(Device::cpu, engine, name)->unsupported(config, batch))
        continue;
      const Observed seen = run_once(Device::cpu, engine, name, *w, w->thresholds(Scenario::parse(GetParam())), input);
      const int deepest =
          std::string(name) == "masked" ? config.final_exit() : *std::max_element(seen.exits.begin(), seen.exits.end());
      double want = input_bytes;
      for (int k = 0; k < std::min(deepest, config.blocks); ++k) want += block_bytes(config, k) + head_bytes(config, k);
      if (deepest == config.final_exit()) want += head_bytes(config, config.blocks);
      EXPECT_DOUBLE_EQ(seen.counters.bytes_read, want) << to_string(engine) << "/" << name << " batch " << batch;
    }
  }
}

// aoti/cond: AOTInductor's torch.cond reads each exit test on the host and runs one row up to its
// exit; aoti/masked runs every block and head for every row and decides nothing on the host.
TEST_P(CountersTest, AotiStrategiesCountWhatTheirExitsRan) {
  auto one = workload(1);
  const Observed cond = run_once(Device::cpu, Engine::aoti, "cond", *one, one->thresholds(Scenario::parse(GetParam())),
                                 one->batches()[0]);
  ASSERT_EQ(cond.exits.size(), 1u);
  EXPECT_EQ(cond.counters.host_syncs, std::min(cond.exits[0], one->config().blocks));
  EXPECT_DOUBLE_EQ(cond.counters.flops_executed, cond.useful);
  EXPECT_GT(cond.counters.launches, 0);  // its extern calls to ATen (the Linears)
  auto w = workload(64);
  const Observed masked =
      run_once(Device::cpu, Engine::aoti, "masked", *w, w->thresholds(Scenario::parse(GetParam())), w->batches()[0]);
  EXPECT_EQ(masked.counters.host_syncs, 0);
  EXPECT_DOUBLE_EQ(masked.counters.flops_executed, 64 * full_model_flops(w->config()));
}

TEST_P(CountersTest, UsefulNeverExceedsExecuted) {
  for (const StrategyInfo* info : strategies_on(Device::cpu))
    for (int64_t batch : {1, 64}) {
      if (info->unsupported(model_config("mlp"), batch)) continue;
      auto w = workload(batch);
      const Observed seen = run_once(info->device, info->engine, info->name, *w,
                                     w->thresholds(Scenario::parse(GetParam())), w->batches()[0]);
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
  ModelConfig config = model_config("mlp");  // 32 -> 64 x3, 10 classes
  const double block0 = 2.0 * 32 * 64, block = 2.0 * 64 * 64, head = 2.0 * 64 * 10;
  EXPECT_DOUBLE_EQ(useful_flops(config, 1), block0 + head);
  EXPECT_DOUBLE_EQ(useful_flops(config, 3), block0 + 2 * block + 3 * head);
  EXPECT_DOUBLE_EQ(useful_flops(config, 4), block0 + 2 * block + 4 * head);
  EXPECT_DOUBLE_EQ(full_model_flops(config), useful_flops(config, 4));
}

TEST(Bytes, WeightsAndBiasesInFloats) {
  ModelConfig config = model_config("mlp");  // 32 -> 64 x3, 10 classes
  EXPECT_DOUBLE_EQ(block_bytes(config, 0), 4.0 * (32 * 64 + 64));
  EXPECT_DOUBLE_EQ(block_bytes(config, 1), 4.0 * (64 * 64 + 64));
  EXPECT_DOUBLE_EQ(head_bytes(config, 0), 4.0 * (64 * 10 + 10));
  EXPECT_DOUBLE_EQ(full_model_bytes(config),
                   block_bytes(config, 0) + 2 * block_bytes(config, 1) + 4 * head_bytes(config, 0));
}

}  // namespace
}  // namespace condbench::testing
