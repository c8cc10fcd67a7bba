// Every CUDA strategy, native and torch engine (issues 3 and 4), on a GPU: strategy x scenario x
// batch {1, 7, 256} x configs (default, hidden 1024, hidden 4096, 12 blocks) against the
// double-precision reference, and the counters each must report. Without a GPU every test skips
// with the reason.
#include <gtest/gtest.h>

#include <map>

#include "condbench/flops.h"
#include "condbench/workload.h"
#include "gpu_test_support.h"
#include "reference.h"

namespace condbench::testing {
namespace {

constexpr double kGpuLogitTolerance = 1e-4;

struct Config {
  const char* name;
  int hidden, blocks;
};
void PrintTo(const Config& c, std::ostream* os) { *os << c.name; }
const Config kConfigs[] = {{"default", 64, 3}, {"hidden1024", 1024, 3}, {"hidden4096", 4096, 3}, {"blocks12", 64, 12}};

std::string label(const StrategyInfo* info) { return info->key(); }

class CudaStrategies : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override { skip_without_gpu(); }
};

TEST_P(CudaStrategies, EveryStrategyScenarioAndBatchMatchesTheReference) {
  const Config c = GetParam();
  ModelSource source;
  source.config.hidden = c.hidden;
  source.config.blocks = c.blocks;
  const auto largest = shared_workload(source, 256);
  // The reference's heads for the first 256 pool rows; smaller batches are the same rows' prefix.
  const ReferenceHeads heads = reference_heads(largest->config(), largest->model()->flat_parameters(),
                                               largest->batches()[0]);
  const auto strategies = strategies_on(Device::cuda);
  ASSERT_GE(strategies.size(), 11u);
  for (const StrategyInfo* info : strategies) {
    for (int64_t batch : {1, 7, 256}) {
      const auto workload = shared_workload(source, batch);
      auto strategy = info->make();
      strategy->prepare(workload->model(), batch);
      const at::Tensor input = workload->batches()[0].to(at::kCUDA);
      for (const std::string& scenario : scenario_names(c.blocks)) {
        SCOPED_TRACE(label(info) + " " + c.name + " batch=" + std::to_string(batch) + " " + scenario);
        const std::vector<float> thresholds = workload->thresholds(scenario);
        const ExitOutput out = strategy->run(input, thresholds);
        strategy->finish();
        EXPECT_TRUE(matches_reference(out, pick_exits(heads, thresholds, batch), kGpuLogitTolerance));
      }
    }
  }
}

TEST_P(CudaStrategies, CountersSayWhatEachStrategyDoes) {
  const Config c = GetParam();
  ModelSource source;
  source.config.hidden = c.hidden;
  source.config.blocks = c.blocks;
  const auto workload = shared_workload(source, 7);
  const at::Tensor input = workload->batches()[0].to(at::kCUDA);
  const std::map<std::string, int64_t> single_launch = {
      {"native/device_flag_graph", 1}, {"native/graph_cond", 1}, {"native/graph_while", 1}, {"native/fused", 1},
      {"torch/masked_graph", 2}, {"torch/graph_cond", 2}};  // torch graphs: the input copy and the replay
  for (const StrategyInfo* info : strategies_on(Device::cuda)) {
    const std::string key = std::string(to_string(info->engine)) + "/" + info->name;
    SCOPED_TRACE(key + " " + c.name);
    auto strategy = info->make();
    strategy->prepare(workload->model(), 7);
    for (const std::string& scenario : {std::string("exit:1"), std::string("mix:uniform"), "exit:" + std::to_string(c.blocks + 1)}) {
      const ExitOutput out = strategy->run(input, workload->thresholds(scenario));
      strategy->finish();
      const InferenceCounters counters = strategy->counters();
      const at::Tensor ids = out.exit_id.to(at::kCPU);
      double useful = 0;
      int deepest = 0;
      for (int64_t r = 0; r < ids.numel(); ++r) {
        useful += useful_flops(workload->config(), ids[r].item<int>());
        deepest = std::max(deepest, ids[r].item<int>());
      }
      const int tests_reached = std::min(deepest, c.blocks);
      EXPECT_LE(useful, counters.flops_executed * (1 + 1e-12)) << scenario;
      if (info->engine == Engine::native) {
        EXPECT_EQ(counters.host_syncs, 0) << scenario;
        // Rows that left are skipped, so the work done is the work needed.
        EXPECT_DOUBLE_EQ(counters.flops_executed, useful) << scenario;
      }
      if (single_launch.count(key)) {
        EXPECT_EQ(counters.launches, single_launch.at(key)) << scenario;
        EXPECT_EQ(counters.host_syncs, 0) << scenario;
      } else if (key == "native/device_flag") {
        EXPECT_EQ(counters.launches, 3 * c.blocks + 3) << scenario;
      } else if (key == "torch/eager_host" || key == "torch/eager_host_pinned" || key == "torch/segmented_graph") {
        EXPECT_EQ(counters.host_syncs, tests_reached) << scenario;  // one host decision per exit test reached
      } else if (key == "torch/masked") {
        EXPECT_EQ(counters.host_syncs, 0) << scenario;
        EXPECT_DOUBLE_EQ(counters.flops_executed, 7 * full_model_flops(workload->config())) << scenario;
      }
    }
  }
}

TEST_P(CudaStrategies, ANewInputIsPickedUp) {
  const Config c = GetParam();
  ModelSource source;
  source.config.hidden = c.hidden;
  source.config.blocks = c.blocks;
  const auto workload = shared_workload(source, 7);
  const std::vector<float> thresholds = workload->thresholds("mix:uniform");
  for (const StrategyInfo* info : strategies_on(Device::cuda)) {
    SCOPED_TRACE(label(info));
    auto strategy = info->make();
    strategy->prepare(workload->model(), 7);
    for (size_t b : {size_t{3}, size_t{5}, size_t{3}}) {
      const at::Tensor input = workload->batches()[b].to(at::kCUDA);
      const ExitOutput out = strategy->run(input, thresholds);
      strategy->finish();
      const ReferenceResult ref = reference_forward(workload->config(), workload->model()->flat_parameters(),
                                                    workload->batches()[b], thresholds);
      EXPECT_TRUE(matches_reference(out, ref, kGpuLogitTolerance)) << "pool batch " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaStrategies, ::testing::ValuesIn(kConfigs),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace condbench::testing
