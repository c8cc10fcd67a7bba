#include "benchmark_case.h"

#include <ATen/ATen.h>

#include <chrono>

#include "cli.h"
#include "condbench/flops.h"
#include "condbench/nvtx.h"
#include "condbench/torch_device.h"
#include "device_timing.h"
#include "test_slowdown.h"

namespace condbench {

std::string BenchmarkCase::name() const {
  return std::string("early_exit/") + to_string(strategy->device) + "/" + to_string(strategy->engine) + "/" +
         strategy->name + "/" + scenario + "/batch:" + std::to_string(batch) +
         "/hidden:" + std::to_string(config.hidden) + "/blocks:" + std::to_string(config.blocks);
}

namespace {

constexpr int kGpuTimedInferences = 200;

// What one inference on one pool batch did, learnt in the untimed pass.
struct BatchRecord {
  InferenceCounters counters;
  double flops_useful = 0.0;
  std::vector<int64_t> exits;  // rows leaving at exit k+1
};

BatchRecord record(const Strategy& strategy, const ExitOutput& out, const ModelConfig& config) {
  BatchRecord rec;
  rec.counters = strategy.counters();
  rec.exits.assign(config.num_exits(), 0);
  const at::Tensor ids = out.exit_id.to(at::kCPU, at::kInt).contiguous();
  const int32_t* id = ids.data_ptr<int32_t>();
  for (int64_t r = 0; r < ids.numel(); ++r) {
    ++rec.exits.at(id[r] - 1);
    rec.flops_useful += useful_flops(config, id[r]);
  }
  return rec;
}

// Per-inference averages over the iterations actually run: iteration i used batch i % n.
void report_counters(benchmark::State& state, const std::vector<BatchRecord>& records, const ModelConfig& config,
                     int64_t batch) {
  const int64_t n = static_cast<int64_t>(records.size());
  const int64_t iterations = static_cast<int64_t>(state.iterations());
  double syncs = 0, launches = 0, executed = 0, useful = 0, weight_sum = 0;
  std::vector<double> exits(config.num_exits(), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double visits = static_cast<double>(iterations / n + (j < iterations % n ? 1 : 0));
    const BatchRecord& rec = records[j];
    syncs += visits * rec.counters.host_syncs;
    launches += visits * rec.counters.launches;
    executed += visits * rec.counters.flops_executed;
    useful += visits * rec.flops_useful;
    for (size_t k = 0; k < exits.size(); ++k) exits[k] += visits * rec.exits[k];
    weight_sum += visits;
  }
  const double rows = weight_sum * batch;
  state.counters["host_syncs"] = syncs / weight_sum;
  state.counters["launches"] = launches / weight_sum;
  state.counters["flops_executed"] = executed / weight_sum;
  state.counters["flops_useful"] = useful / weight_sum;
  double exit_mean = 0;
  for (size_t k = 0; k < exits.size(); ++k) {
    state.counters["exit_" + std::to_string(k + 1)] = exits[k] / rows;
    exit_mean += (k + 1) * exits[k] / rows;
  }
  state.counters["exit_mean"] = exit_mean;
  state.SetItemsProcessed(iterations * batch);  // rows per second
}

// The timed inferences, walking the pool. kSlowdown: spin after each inference until it has taken
// `factor` times as long (CONDBENCH_TEST_SLOWDOWN; the clock reads make it a little more).
template <bool kSlowdown>
void timed_loop(benchmark::State& state, Strategy& strategy, const std::vector<at::Tensor>& inputs,
                const std::vector<float>& thresholds, double factor) {
  using Clock = std::chrono::steady_clock;
  const size_t n = inputs.size();
  size_t next = 0;
  for (auto _ : state) {
    [[maybe_unused]] Clock::time_point start;
    if constexpr (kSlowdown) start = Clock::now();
    const nvtx::ScopedRange iteration(nvtx::Level::iter, nvtx::inference_string());
    ExitOutput out = strategy.run(inputs[next], thresholds);
    strategy.finish();
    benchmark::DoNotOptimize(out);
    if (++next == n) next = 0;
    if constexpr (kSlowdown) {
      const auto until = start + std::chrono::duration_cast<Clock::duration>((Clock::now() - start) * factor);
      while (Clock::now() < until) {
      }
    }
  }
}

void run_case(benchmark::State& state, const BenchmarkCase& c) {
  const Device device = c.strategy->device;
  if (device == Device::cuda && !cli::cuda_available()) {
    state.SkipWithError("skipped: no CUDA device on this machine");
    return;
  }
  const std::shared_ptr<const Workload> workload = shared_workload(c.source, c.batch);
  const ModelConfig& config = workload->config();
  const std::vector<float> thresholds = workload->thresholds(c.scenario);
  std::unique_ptr<Strategy> strategy = c.strategy->make();
  strategy->prepare(workload->model(), c.batch);

  // The pool goes to the device before anything is timed.
  std::vector<at::Tensor> inputs;
  for (const at::Tensor& b : workload->batches_for(c.scenario)) inputs.push_back(b.to(torch_device(device)).contiguous());
  if (device == Device::cuda) synchronize_cuda_device();

  // Untimed pass over the whole pool: warms caches and lazy initialisation, and records what each
  // inference does, so the timed loop holds nothing but the inferences.
  std::vector<BatchRecord> records;
  for (const at::Tensor& input : inputs) {
    const ExitOutput out = strategy->run(input, thresholds);
    strategy->finish();
    records.push_back(record(*strategy, out, config));
  }

  const nvtx::ScopedRange run_range(nvtx::Level::run, c.name());
  const double slowdown =
      test_slowdown(std::string(to_string(device)) + "/" + to_string(c.strategy->engine) + "/" + c.strategy->name);
  // Two instantiations, so an ordinary run's loop holds no test for the knob.
  if (slowdown > 1.0)
    timed_loop<true>(state, *strategy, inputs, thresholds, slowdown);
  else
    timed_loop<false>(state, *strategy, inputs, thresholds, 1.0);
  report_counters(state, records, config, c.batch);
  // GPU time from CUDA events, measured after the timed loop so the events cost it nothing.
  if (const auto gpu_us = gpu_time_us(*strategy, inputs, thresholds, kGpuTimedInferences))
    state.counters["gpu_us"] = *gpu_us;
}

}  // namespace

void run_benchmark_case(benchmark::State& state, const BenchmarkCase& c) {
  try {
    run_case(state, c);
  } catch (const std::exception& e) {
    std::string what = e.what();
    state.SkipWithError(("error: " + what.substr(0, what.find('\n'))).c_str());
  }
}

}  // namespace condbench
