// Every CUDA strategy, native and torch engine, on a GPU: one test per (strategy, config) pair —
// so a strategy that fails cannot hide the others — over every scenario and batch {1, 7, 70, 200},
// against the double-precision reference, plus the counters each must report and the re-pointing
// of captured graphs at new inputs. Without a GPU every test skips with the reason.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <tuple>

#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/flops.h"
#include "condbench/workload.h"
#include "gpu_test_support.h"
#include "reference.h"

namespace condbench {
// gtest prints each case's parameters: the strategy by its key, not its address.
inline void PrintTo(const StrategyInfo* info, std::ostream* os) { *os << info->key(); }
}  // namespace condbench

namespace condbench::testing {
namespace {

constexpr double kGpuLogitTolerance = 1e-4;

struct Config {
  const char* name;
  int hidden, blocks;  // a transformer's hidden is its d_model
  bool transformer = false;
};
void PrintTo(const Config& c, std::ostream* os) { *os << c.name; }
// Partial tiles in every kernel: hidden 100 and 4100 (outputs and inputs past a tile), batch 7,
// 70 and 200 (rows past a group). hidden4100 at batch 200 runs the tiled Linear kernel on an H200
// (65 x 4 tiles >= 132 multiprocessors); every other case the sliced one.
// The transformer (d_model 64, 4 heads, ffn 128, 16 tokens) runs on the torch engine only.
const Config kConfigs[] = {{"default", 64, 3},      {"hidden100", 100, 3}, {"hidden1024", 1024, 3},
                           {"hidden4100", 4100, 3}, {"blocks12", 64, 12},  {"transformer", 64, 2, true}};

using Case = std::tuple<const StrategyInfo*, Config>;

class CudaStrategies : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    skip_without_gpu();
    // An aoti strategy runs where its package was compiled (bench/python/aoti_compile.py --device=cuda).
    if (const Unsupported why = info().unsupported(source().config, 1)) GTEST_SKIP() << *why;
  }
  // The test's batch, or a skip where the strategy cannot run it (aoti/cond takes one row).
  bool runs(int64_t batch) const { return !info().unsupported(source().config, batch); }
  const StrategyInfo& info() const { return *std::get<0>(GetParam()); }
  const Config& config() const { return std::get<1>(GetParam()); }
  ModelSource source() const {
    ModelSource s;
    if (config().transformer) {
      s.config = ModelConfig::transformer();
      s.config.d_model = config().hidden;
      s.config.ffn = 2 * config().hidden;
      s.config.seq = 16;
    } else {
      s.config.hidden = config().hidden;
    }
    s.config.blocks = config().blocks;
    return s;
  }
};

// The reference's heads for the first 256 pool rows (smaller batches are the same rows' prefix),
// computed once per model: in double precision on the host it takes seconds at hidden 4096, and
// every strategy of that config compares against it.
const ReferenceHeads& reference_for(const ModelSource& source) {
  static std::map<std::string, ReferenceHeads> cache;
  const std::string key = source.key();
  auto it = cache.find(key);
  if (it == cache.end()) {
    const auto largest = shared_workload(source, 256);
    it = cache
             .emplace(key,
                      reference_heads(largest->config(), largest->model()->flat_parameters(), largest->batches()[0]))
             .first;
  }
  return it->second;
}

std::string case_name(const ::testing::TestParamInfo<Case>& param) {
  std::string name = std::get<0>(param.param)->key() + "_" + std::get<1>(param.param).name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

TEST_P(CudaStrategies, EveryScenarioAndBatchMatchesTheReference) {
  const Config c = config();
  const ReferenceHeads& heads = reference_for(source());
  for (int64_t batch : {1, 7, 70, 200}) {
    if (!runs(batch)) continue;
    const auto workload = shared_workload(source(), batch);
    auto strategy = info().make();
    strategy->prepare(workload->model(), batch);
    const at::Tensor input = workload->batches()[0].to(at::kCUDA);
    for (const Scenario& scenario : all_scenarios(c.blocks)) {
      SCOPED_TRACE("batch=" + std::to_string(batch) + " " + scenario.str());
      const std::vector<float> thresholds = workload->thresholds(scenario);
      const ExitOutput out = strategy->run(input, thresholds);
      strategy->finish();
      EXPECT_TRUE(matches_reference(out, pick_exits(heads, thresholds, batch), kGpuLogitTolerance));
    }
  }
}

TEST_P(CudaStrategies, CountersSayWhatTheStrategyDoes) {
  const Config c = config();
  if (!runs(7)) GTEST_SKIP() << info().key() << " runs one row at a time";
  const auto workload = shared_workload(source(), 7);
  const at::Tensor input = workload->batches()[0].to(at::kCUDA);
  auto strategy = info().make();
  strategy->prepare(workload->model(), 7);
  for (const Scenario& scenario : {Scenario::forced(1), Scenario::mix("uniform"), Scenario::forced(c.blocks + 1)}) {
    SCOPED_TRACE(scenario.str());
    const std::vector<float> thresholds = workload->thresholds(scenario);
    strategy->run(input, thresholds);  // the thresholds' upload is not part of an inference
    strategy->finish();
    const Strategy::Observed observed = strategy->observed_run(input, thresholds);
    const InferenceCounters& counters = observed.counters;
    const at::Tensor ids = observed.output.exit_id.to(at::kCPU);
    double useful = 0;
    int deepest = 0;
    for (int64_t r = 0; r < ids.numel(); ++r) {
      useful += useful_flops(workload->config(), ids[r].item<int>());
      deepest = std::max(deepest, ids[r].item<int>());
    }
    const int tests_reached = std::min(deepest, c.blocks);
    EXPECT_LE(useful, counters.flops_executed * (1 + 1e-12));
    if (info().engine == Engine::native) {
      EXPECT_EQ(counters.host_syncs, 0);
      // At batch 7 every native kernel computes rows in groups of 4 (cuda::linear_group_rows; fused:
      // 4 rows per block), each group as deep as its deepest row goes: the rows of groups that have
      // all left are skipped.
      ASSERT_EQ(cuda::linear_group_rows(7, c.hidden, 1 << 20), 4);
      double grouped = 0;
      for (int64_t g0 = 0; g0 < ids.numel(); g0 += 4) {
        const int64_t end = std::min<int64_t>(ids.numel(), g0 + 4);
        int group_deepest = 1;
        for (int64_t r = g0; r < end; ++r) group_deepest = std::max(group_deepest, ids[r].item<int>());
        grouped += static_cast<double>(end - g0) * useful_flops(workload->config(), group_deepest);
      }
      EXPECT_DOUBLE_EQ(counters.flops_executed, grouped);
    }
    // What the strategy declares, its counters show (no strategy named here).
    EXPECT_EQ(counters.host_syncs, info().host_decides ? tests_reached : 0);
    // One launch: a graph or the fused kernel, plus the input copy (an ATen call) on the torch engine.
    if (info().single_launch) EXPECT_EQ(counters.launches, info().engine == Engine::torch ? 2 : 1);
    EXPECT_GE(counters.launches, 1);
  }
}

// A captured graph holds the address of its input; each strategy must pick up a new one. The
// inputs stay alive together, so each has its own address and every re-pointing path runs
// (the caching allocator would otherwise hand a freed input's block to the next).
TEST_P(CudaStrategies, ANewInputIsPickedUp) {
  if (!runs(7)) GTEST_SKIP() << info().key() << " runs one row at a time";
  const auto workload = shared_workload(source(), 7);
  const std::vector<float> thresholds = workload->thresholds(Scenario::mix("uniform"));
  const std::vector<size_t> pool_batches = {3, 5, 3};
  std::vector<at::Tensor> inputs;
  for (size_t b : pool_batches) inputs.push_back(workload->batches()[b].to(at::kCUDA));
  ASSERT_NE(inputs[0].data_ptr(), inputs[1].data_ptr());
  ASSERT_NE(inputs[1].data_ptr(), inputs[2].data_ptr());
  ASSERT_NE(inputs[0].data_ptr(), inputs[2].data_ptr());
  auto strategy = info().make();
  strategy->prepare(workload->model(), 7);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ExitOutput out = strategy->run(inputs[i], thresholds);
    strategy->finish();
    const ReferenceResult ref = reference_forward(workload->config(), workload->model()->flat_parameters(),
                                                  workload->batches()[pool_batches[i]], thresholds);
    EXPECT_TRUE(matches_reference(out, ref, kGpuLogitTolerance))
        << "input " << i << " (pool batch " << pool_batches[i] << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaStrategies,
                         ::testing::Combine(::testing::ValuesIn(strategies_on(Device::cuda)),
                                            ::testing::ValuesIn(kConfigs)),
                         case_name);

// The registry holds every CUDA strategy this test file knows about: a strategy that failed to
// register would otherwise just have no tests.
TEST(CudaRegistry, HoldsEveryCudaStrategy) { EXPECT_GE(strategies_on(Device::cuda).size(), 11u); }

}  // namespace
}  // namespace condbench::testing
