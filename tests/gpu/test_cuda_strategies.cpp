// Every CUDA strategy, native and torch engine, on a GPU: one test per (strategy, config) pair —
// so a strategy that fails cannot hide the others — over every scenario and batch {1, 7, 70, 200},
// against the double-precision reference, plus the counters each must report and the re-pointing
// of captured graphs at new inputs. The native Linear kernels run both ways there: the GEMV at
// batch 1 and 7, the GEMM at 70 and 200, split-K where a layer's tiles are few (hidden 1024, the
// heads); fused's two kernels each at every width (OtherFusedKernel runs the one the rule does
// not pick). Without a GPU every test skips with the reason; a strategy
// that cannot run a config skips with "unsupported: " and its own reason (scripts/device-check
// fails a step on any other skip).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/cuda/linear_plan.h"
#include "condbench/cuda/stream_hold.h"
#include "condbench/cuda/stuck_condition.h"
#include "condbench/flops.h"
#include "condbench/workload.h"
#include "gpu_test_support.h"
#include "native/cuda/fused.h"
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
// 70 and 200 (rows past a group). The GEMM splits its sum at hidden 1024 (batch 70 and 200 on an
// H200: 32 and 64 tiles for 132 multiprocessors) and in every head; hidden4100 at batch 200 has
// 65 x 4 tiles, no split.
// The transformer (d_model 64, 4 heads, ffn 128, 16 tokens) runs on the torch engine only.
const Config kConfigs[] = {{"default", 64, 3},      {"hidden100", 100, 3}, {"hidden1024", 1024, 3},
                           {"hidden4100", 4100, 3}, {"blocks12", 64, 12},  {"transformer", 64, 2, true}};

using Case = std::tuple<const StrategyInfo*, Config>;

class CudaStrategies : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    skip_without_gpu();
    // An aoti strategy runs where its package was compiled (python/condbench/aoti.py --device=cuda).
    if (const Unsupported why = info().unsupported(source().config, 1)) GTEST_SKIP() << "unsupported: " << *why;
  }
  void check_counters(int64_t batch, bool clustered);
  void check_every_scenario_and_batch();
  // The test's batch, or a skip where the strategy cannot run it (aoti/cond takes one row).
  bool runs(int64_t batch) const { return !info().unsupported(source().config, batch); }
  const StrategyInfo& info() const { return *std::get<0>(GetParam()); }
  const Config& config() const { return std::get<1>(GetParam()); }
  ModelSource source() const {
    ModelSource s;
    if (config().transformer) {
      s.config = model_config("transformer");
      s.config.set("d_model", config().hidden);
      s.config.set("ffn", 2 * config().hidden);
      s.config.set("seq", 16);
    } else {
      s.config.set("hidden", config().hidden);
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

void CudaStrategies::check_every_scenario_and_batch() {
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

TEST_P(CudaStrategies, EveryScenarioAndBatchMatchesTheReference) { check_every_scenario_and_batch(); }

// FLOPs of computing rows in groups, each layer over every group holding a row that still runs
// it: rows leaving at exit e run blocks and heads 1..min(e, blocks), and the final head when
// e = blocks + 1. group_rows(outputs): the group size of a layer with that many outputs.
double grouped_flops(const ModelConfig& config, const std::vector<int>& ids,
                     const std::function<int(int)>& group_rows) {
  const auto layer = [&](int outputs, double per_row, const std::function<bool(int)>& runs) {
    const int g = group_rows(outputs);
    double flops = 0;
    for (size_t g0 = 0; g0 < ids.size(); g0 += g) {
      const size_t end = std::min(ids.size(), g0 + g);
      if (std::any_of(ids.begin() + g0, ids.begin() + end, runs)) flops += static_cast<double>(end - g0) * per_row;
    }
    return flops;
  };
  double flops = 0;
  for (int k = 0; k < config.blocks; ++k) {
    const auto reaches = [k](int id) { return id > k; };
    flops += layer(config.size("hidden"), block_flops(config, k), reaches) +
             layer(config.num_classes, head_flops(config, k), reaches);
  }
  return flops + layer(config.num_classes, head_flops(config, config.blocks),
                       [&](int id) { return id == config.final_exit(); });
}

int multiprocessors() {
  int device = 0, count = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  return count;
}

// The stages the device counted against what the strategy declares of its skipping, at a batch
// whose deepest row left at exit `deepest`: a strategy that skips blocks on the device runs
// min(deepest, B) blocks, and one head per block plus the final head's, which it skips too if it
// says so and no row took the final exit. A conditional stuck open at any depth runs one block or
// one head too many, with outputs still right (a body run for nothing merges no row): only these
// counters can tell. Strategies that do not skip count every block (or, deciding on the host, the
// blocks it reached) where they count at all.
::testing::AssertionResult skipped_as_declared(const StrategyInfo& info, const InferenceCounters& counters, int deepest,
                                               int blocks) {
  const int reached = std::min(deepest, blocks);
  // The final head runs when some row took the final exit; otherwise only where nothing skips it:
  // a host that decides stops before it, a strategy that skips it on the device says so.
  const bool final_head =
      deepest > blocks || !(info.host_decides || (info.skips_blocks_on_device && info.skips_final_head_on_device));
  if (info.skips_blocks_on_device && (std::isnan(counters.blocks_run) || std::isnan(counters.heads_run)))
    return ::testing::AssertionFailure() << "a strategy that skips blocks on the device counts blocks and heads";
  const double blocks_expected = info.skips_blocks_on_device || info.host_decides ? reached : blocks;
  const double heads_expected = blocks_expected + (final_head ? 1 : 0);
  if (!std::isnan(counters.blocks_run) && counters.blocks_run != blocks_expected)
    return ::testing::AssertionFailure() << "blocks_run " << counters.blocks_run << ", expected " << blocks_expected
                                         << " (deepest exit " << deepest << " of " << blocks + 1 << ")";
  if (!std::isnan(counters.heads_run) && counters.heads_run != heads_expected)
    return ::testing::AssertionFailure() << "heads_run " << counters.heads_run << ", expected " << heads_expected
                                         << " (deepest exit " << deepest << " of " << blocks + 1 << ")";
  return ::testing::AssertionSuccess();
}

// Rows per thread block of the fused kernel on this GPU.
int fused_block_rows(int batch, const ModelConfig& config) {
  int device = 0, limit = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), cudaSuccess);
  return cuda::fused_launch(batch, config.size("hidden"), config.num_classes,
                            static_cast<size_t>(limit) - cuda::fused_static_shared_bytes())
      .rows;
}

// The counters of one batch: what the strategy declares (host waits, one launch, blocks skipped on
// the device), what it computed, and for a native strategy the FLOPs of its row groups exactly.
// clustered: the rows sorted by their exit under mix:uniform, so whole groups leave together and
// the kernels' skip of a group that has left is exercised.
void CudaStrategies::check_counters(int64_t batch, bool clustered) {
  const Config c = config();
  const auto workload = shared_workload(source(), batch);
  at::Tensor input = workload->batches()[0];
  if (clustered) {
    const ReferenceResult mix =
        pick_exits(reference_for(source()), workload->thresholds(Scenario::mix("uniform")), batch);
    const at::Tensor exits = at::tensor(std::vector<int64_t>(mix.exit_id.begin(), mix.exit_id.end()));
    input = input.index_select(0, at::argsort(exits, /*stable=*/true));
  }
  input = input.to(at::kCUDA).contiguous();
  auto strategy = info().make();
  strategy->prepare(workload->model(), batch);
  // Every forced exit, level by level (exit:k runs min(k, B) blocks: a nested conditional stuck open
  // at any depth runs one too many), and a mix.
  std::vector<Scenario> scenarios;
  for (int k = 1; k <= c.blocks + 1; ++k) scenarios.push_back(Scenario::forced(k));
  scenarios.push_back(Scenario::mix("uniform"));
  for (const Scenario& scenario : scenarios) {
    SCOPED_TRACE("batch=" + std::to_string(batch) + (clustered ? " clustered " : " ") + scenario.str());
    const std::vector<float> thresholds = workload->thresholds(scenario);
    strategy->run(input, thresholds);  // the thresholds' upload is not part of an inference
    strategy->finish();
    const Strategy::Observed observed = strategy->observed_run(input, thresholds);
    const InferenceCounters& counters = observed.counters;
    const at::Tensor id_tensor = observed.output.exit_id.to(at::kCPU, at::kInt).contiguous();
    const std::vector<int> ids(id_tensor.data_ptr<int>(), id_tensor.data_ptr<int>() + id_tensor.numel());
    double useful = 0;
    for (int id : ids) useful += useful_flops(workload->config(), id);
    const int deepest = *std::max_element(ids.begin(), ids.end());
    const int blocks_reached = std::min(deepest, c.blocks);
    EXPECT_LE(useful, counters.flops_executed * (1 + 1e-12));
    // Which blocks and heads ran, counted on the device, level by level.
    EXPECT_TRUE(skipped_as_declared(info(), counters, deepest, c.blocks));
    if (info().engine == Engine::native) {
      EXPECT_EQ(counters.host_syncs, 0);
      // The stage kernels and the persistent fused kernel compute each layer in the row groups of
      // its plan (linear_plan.h: the batch up to 8 rows, 64-row tiles above); the single-block
      // fused kernel computes each thread block's rows (4 from batch 4, where they fit in shared
      // memory) as deep as the deepest of them goes; cuBLAS computes every layer for every row.
      const ModelConfig& m = workload->config();
      const int sms = multiprocessors(), rows = static_cast<int>(batch);
      const bool single_block =
          info().name == "fused" &&
          cuda::fused_choice(m.size("hidden"), m.num_classes, rows).kernel == cuda::FusedKernel::single_block;
      const int fused_rows = fused_block_rows(rows, m);
      if (info().name == "masked_graph_cublas") {
        EXPECT_DOUBLE_EQ(counters.flops_executed, static_cast<double>(batch) * useful_flops(m, m.final_exit()));
      } else {
        EXPECT_DOUBLE_EQ(counters.flops_executed, grouped_flops(m, ids, [&](int outputs) {
                           return single_block ? fused_rows
                                               : cuda::plan_linear(rows, m.size("hidden"), outputs, sms).group_rows;
                         }));
      }
    }
    EXPECT_EQ(counters.host_syncs, info().host_decides ? blocks_reached : 0);
    // One launch: a graph or the fused kernel, plus the input copy (an ATen call) on the torch engine.
    if (info().single_launch) EXPECT_EQ(counters.launches, info().engine == Engine::torch ? 2 : 1);
    EXPECT_GE(counters.launches, 1);
  }
}

TEST_P(CudaStrategies, CountersSayWhatTheStrategyDoes) {
  if (!runs(7)) GTEST_SKIP() << "unsupported: " << info().key() << " runs one row at a time";
  check_counters(7, /*clustered=*/false);
  // At batch 200 the GEMM runs the blocks in 64-row tiles; clustered rows leave whole tiles behind,
  // which it must skip: without a split at hidden 4100, with every part of a split sum skipping
  // alike at hidden 1024 (a part that counted its arrival alone would leave the tile's count wrong
  // for the next launch; the native kernels only, the others have no split of theirs to check).
  if (config().hidden == 4100 || (config().hidden == 1024 && info().engine == Engine::native)) {
    ASSERT_EQ(cuda::plan_linear(200, config().hidden, config().hidden, multiprocessors()).group_rows, 64);
    check_counters(200, /*clustered=*/true);
  }
}

// The check of skipping can fail: with the conditional after exit test `level` held open (a fault
// injected at capture: cuda::testing::StuckCondition), each level in turn, a strategy that skips on
// the device runs one stage too many when every row leaves at that exit — the next block, or at
// the last level graph_cond's final head (graph_while's last test ends its loop whatever it says)
// — its outputs stay right, and skipped_as_declared says which counter is off. Nesting does not
// depend on the width: the configs of hidden 64 and 100, 12 blocks and the transformer
// (stuck_conditional_cases, below).
class StuckConditionals : public CudaStrategies {};

TEST_P(StuckConditionals, AConditionalStuckOpenIsCaught) {
  const Config c = config();
  if (!runs(7)) GTEST_SKIP() << "unsupported: " << info().key() << " runs one row at a time";
  const auto workload = shared_workload(source(), 7);
  const at::Tensor input = workload->batches()[0].to(at::kCUDA);
  const int levels = info().skips_final_head_on_device ? c.blocks : c.blocks - 1;
  for (int level = 0; level < levels; ++level) {
    SCOPED_TRACE("conditional after exit test " + std::to_string(level) + " held open");
    const std::vector<float> thresholds = workload->thresholds(Scenario::forced(level + 1));
    std::unique_ptr<Strategy> strategy;
    {
      const cuda::testing::StuckCondition stuck(level);
      strategy = info().make();
      strategy->prepare(workload->model(), 7);
    }
    strategy->run(input, thresholds);
    strategy->finish();
    const Strategy::Observed observed = strategy->observed_run(input, thresholds);
    EXPECT_TRUE(matches_reference(
        observed.output,
        reference_forward(workload->config(), workload->model()->flat_parameters(), workload->batches()[0], thresholds),
        kGpuLogitTolerance))
        << "a body run for nothing merges no row";
    const ::testing::AssertionResult verdict = skipped_as_declared(info(), observed.counters, level + 1, c.blocks);
    EXPECT_FALSE(verdict) << "the stuck conditional went unseen: blocks_run " << observed.counters.blocks_run
                          << ", heads_run " << observed.counters.heads_run;
    // And it failed for the stage held open, exactly: the next block and its head, or at graph_cond's
    // last level the final head (graph_while launches its final head whatever the loop did).
    const int blocks_ran = std::min(level + 2, c.blocks);
    const bool final_ran = !info().skips_final_head_on_device || level + 1 == c.blocks;
    EXPECT_EQ(observed.counters.blocks_run, blocks_ran);
    EXPECT_EQ(observed.counters.heads_run, blocks_ran + (final_ran ? 1 : 0));
  }
}

// A captured graph holds the address of its input; each strategy must pick up a new one. The
// inputs stay alive together, so each has its own address and every re-pointing path runs
// (the caching allocator would otherwise hand a freed input's block to the next).
TEST_P(CudaStrategies, ANewInputIsPickedUp) {
  if (!runs(7)) GTEST_SKIP() << "unsupported: " << info().key() << " runs one row at a time";
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

// gpu_us holds the strategy's stream with a spinning kernel while inferences are enqueued behind
// it (bench/device_timing.cpp): a strategy that does not decide on the host must enqueue them
// without waiting for the GPU, or the hold gives up after its timeout and the case loses gpu_us
// (AOTInductor's thread-safe runner waited on the previous run's event).
TEST_P(CudaStrategies, InferencesQueueBehindAHeldStream) {
  if (info().host_decides) GTEST_SKIP() << "unsupported: " << info().key() << " waits on the host by design";
  const auto workload = shared_workload(source(), 1);
  const at::Tensor input = workload->batches()[0].to(at::kCUDA);
  const std::vector<float> thresholds = workload->thresholds(Scenario::mix("uniform"));
  auto strategy = info().make();
  strategy->prepare(workload->model(), 1);
  strategy->run(input, thresholds);
  strategy->finish();
  const auto stream = static_cast<cudaStream_t>(strategy->cuda_stream().value());
  cuda::StreamHold hold(/*timeout_seconds=*/2.0);
  hold.hold(stream);
  try {
    for (int i = 0; i < 3; ++i) strategy->run(input, thresholds);
  } catch (...) {
    hold.release();
    throw;
  }
  hold.release();
  strategy->finish();
  EXPECT_FALSE(hold.timed_out()) << "the host waited for the GPU while the stream was held";
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaStrategies,
                         ::testing::Combine(::testing::ValuesIn(strategies_on(Device::cuda)),
                                            ::testing::ValuesIn(kConfigs)),
                         case_name);

// Only the strategies that skip on the device have a conditional to hold open, and only the
// configs whose nesting differs (the widths do not change it).
std::vector<Case> stuck_conditional_cases() {
  std::vector<Case> cases;
  for (const StrategyInfo* info : strategies_on(Device::cuda))
    for (const Config& c : kConfigs)
      if (info->skips_blocks_on_device && c.hidden <= 100) cases.emplace_back(info, c);
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Strategies, StuckConditionals, ::testing::ValuesIn(stuck_conditional_cases()), case_name);

// fused on CUDA has two kernels, and the rule (linear_plan.h's choose_fused_kernel) gives each only
// some widths: here each runs at the widths it does not get, so both are checked at every one —
// the persistent kernel at hidden 64 and 100 and with 12 blocks (25 grid barriers), the
// single-block kernel at hidden 1024 (hidden 4100 adds only time: its arithmetic is the same).
class OtherFusedKernel : public CudaStrategies {
 protected:
  void SetUp() override {
    const int hidden = config().hidden;
    forced_.emplace(hidden <= cuda::kSingleBlockMaxHidden ? cuda::FusedKernel::persistent
                                                          : cuda::FusedKernel::single_block);
    CudaStrategies::SetUp();
  }
  void TearDown() override { forced_.reset(); }

 private:
  std::optional<cuda::testing::ForcedFusedKernel> forced_;
};

TEST_P(OtherFusedKernel, EveryScenarioAndBatchMatchesTheReference) { check_every_scenario_and_batch(); }

TEST_P(OtherFusedKernel, CountersSayWhatTheKernelComputes) {
  check_counters(7, /*clustered=*/false);
  // The persistent kernel's GEMM skipping a tile every row of which has left.
  if (config().hidden <= cuda::kSingleBlockMaxHidden) check_counters(70, /*clustered=*/true);
}

std::vector<Case> other_fused_kernel_cases() {
  std::vector<Case> cases;
  for (const StrategyInfo* info : strategies_on(Device::cuda))
    if (info->engine == Engine::native && info->name == "fused")
      for (const Config& c : kConfigs)
        if (!c.transformer && c.hidden != 4100) cases.emplace_back(info, c);
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Strategies, OtherFusedKernel, ::testing::ValuesIn(other_fused_kernel_cases()), case_name);

// The registry holds every CUDA strategy this test file knows about: a strategy that failed to
// register would otherwise just have no tests.
TEST(CudaRegistry, HoldsEveryCudaStrategy) { EXPECT_GE(strategies_on(Device::cuda).size(), 12u); }

// The fused kernel's shared memory is all dynamic and all counted, so a model within a few bytes
// of the device's limit falls back to one row per block (or is declared unsupported) instead of
// failing to launch. The arithmetic runs anywhere; the kernel's own attributes need a GPU.
TEST(FusedLaunch, CountsEveryByteOfSharedMemoryItUses) {
  // hidden 64, 10 classes: per row two activation vectors and the logits, and 256 partial sums;
  // then a flag per row and their count.
  const size_t per_row = (2 * 64 + 10 + 256) * sizeof(float);
  EXPECT_EQ(cuda::fused_launch(1, 64, 10, 1 << 20).shared_bytes, per_row + 2 * sizeof(int));
  const size_t four = 4 * per_row + 5 * sizeof(int);
  EXPECT_EQ(cuda::fused_launch(7, 64, 10, four).rows, 4);
  EXPECT_EQ(cuda::fused_launch(7, 64, 10, four).shared_bytes, four);
  EXPECT_EQ(cuda::fused_launch(7, 64, 10, four - 1).rows, 1);
}

TEST(FusedLaunch, DeclaresNoStaticSharedMemory) {
  skip_without_gpu();
  EXPECT_EQ(cuda::fused_static_shared_bytes(), 0u);
}

}  // namespace
}  // namespace condbench::testing
