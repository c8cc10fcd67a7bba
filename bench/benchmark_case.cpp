#include "benchmark_case.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "cli.h"
#include "condbench/flops.h"
#include "condbench/nvtx.h"
#include "condbench/result_format.h"
#include "condbench/torch_device.h"
#include "device_timing.h"
#include "test_slowdown.h"

namespace condbench {

std::string case_name(Device device, Engine engine, const std::string& strategy, const Scenario& scenario,
                      int64_t batch, const std::vector<std::pair<std::string, std::string>>& model_axes) {
  const std::string axis = scenario.str();
  const size_t colon = axis.find(':');
  BenchmarkName name;
  name.label("early_exit")
      .label(to_string(device))
      .label(to_string(engine))
      .label(strategy)
      .axis(axis.substr(0, colon), axis.substr(colon + 1))
      .axis("batch", std::to_string(batch));
  for (const auto& [key, value] : model_axes) name.axis(key, value);
  return name.str();
}

std::string BenchmarkCase::name() const {
  // The model's axes: the mlp's are those of every earlier result file; another family says which it is.
  return case_name(strategy->device, strategy->engine, strategy->name, scenario, batch, config.name_axes());
}

namespace {

constexpr int kGpuTimedInferences = 200;
constexpr int kGpuTimedInferencesMin = 16;
// walked_batches: the most full-depth work one pass over the inputs a case walks may hold (FLOPs),
// and the fewest rows: the default mlp walks its whole pool, the default transformer 64 rows of it
// (batch 1), a BERT-base encoder 64.
constexpr double kWalkFlops = 2e10;
constexpr int64_t kMinWalkRows = 64;
// With --trace, this many inferences of each case are also placed on the trace's GPU track.
constexpr int kTracedGpuInferences = 16;

// What one inference on one pool batch did, learnt in the untimed pass.
struct BatchRecord {
  InferenceCounters counters;
  double flops_useful = 0.0;
  std::vector<int64_t> exits;  // rows leaving at exit k+1
};

BatchRecord record(const Strategy::Observed& observed, const ModelConfig& config) {
  BatchRecord rec;
  rec.counters = observed.counters;
  rec.exits.assign(config.num_exits(), 0);
  const at::Tensor ids = observed.output.exit_id.to(at::kCPU, at::kInt).contiguous();
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
  InferenceCounters recorded;  // visit-weighted sums
  for (const CounterSpec& spec : kCounters)
    if (spec.field) recorded.*spec.field = 0.0;
  double useful = 0, weight_sum = 0;
  std::vector<double> exits(config.num_exits(), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t whole_walks = iterations / n;  // every pool batch ran this often, the first ones once more
    const double visits = static_cast<double>(whole_walks + (j < iterations % n ? 1 : 0));
    const BatchRecord& rec = records[j];
    for (const CounterSpec& spec : kCounters)
      if (spec.field) recorded.*spec.field += visits * rec.counters.*spec.field;
    useful += visits * rec.flops_useful;
    for (size_t k = 0; k < exits.size(); ++k) exits[k] += visits * rec.exits[k];
    weight_sum += visits;
  }
  const double rows = weight_sum * batch;
  for (const CounterSpec& spec : kCounters)  // a counter the strategy does not know (NaN) is left out
    if (spec.field && !std::isnan(recorded.*spec.field))
      state.counters[std::string(spec.name)] = recorded.*spec.field / weight_sum;
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
    const ExitOutput* out = &strategy.run(inputs[next], thresholds);
    strategy.finish();
    benchmark::DoNotOptimize(out);  // a non-const lvalue: Google Benchmark 1.8 deprecates the const& overload
    if (++next == n) next = 0;
    if constexpr (kSlowdown) {
      const auto until = start + std::chrono::duration_cast<Clock::duration>((Clock::now() - start) * factor);
      while (Clock::now() < until) {
      }
    }
  }
}

int64_t current_round = -1;  // set_round

// What one case's untimed pass learnt, kept for the run: the records of each pool batch and the GPU
// time. Google Benchmark calls a benchmark's function once per iteration count it tries and once
// per repetition; interleaved, the case changes between calls and is made again, and its second
// and later repetitions take this from the first instead of walking the pool again (a
// transformer's walk takes longer than a repetition's timed loop). Small: a few counters per batch.
struct CaseRecord {
  std::vector<BatchRecord> records;
  std::optional<InferenceShape> shape;  // how its GPU time is taken, from the records
  bool traced = false;                  // --trace's GPU spans recorded
};

std::map<std::string, CaseRecord>& case_records() {
  static std::map<std::string, CaseRecord> records;
  return records;
}

// A case made ready to time: the strategy prepared, the pool on its device, and what each inference
// does. In order, every call of a case finds it made; interleaved, it is made again. One case is
// kept at a time, so memory holds one strategy's buffers.
struct PreparedCase {
  std::string name;
  std::shared_ptr<const Workload> workload;
  std::vector<float> thresholds;
  std::unique_ptr<Strategy> strategy;
  std::vector<at::Tensor> inputs;
  CaseRecord* record = nullptr;  // in case_records()
};

PreparedCase& current_case() {
  static PreparedCase current;
  return current;
}

// Inferences run before a remade case is timed again: its caches and lazy state warm, as the untimed
// pass left them the first time.
constexpr size_t kWarmupInferences = 8;

PreparedCase& prepared(const BenchmarkCase& c) {
  PreparedCase& current = current_case();
  const std::string name = c.name();
  if (current.name == name && current.strategy) return current;
  current = PreparedCase{};  // the previous case's buffers go before the next one's are made
  const Device device = c.strategy->device;
  current.workload = shared_workload(c.source, c.batch);
  const ModelConfig& config = current.workload->config();
  current.thresholds = current.workload->thresholds(c.scenario);
  current.strategy = c.strategy->make();
  current.strategy->prepare(current.workload->model(), c.batch);

  // The pool goes to the device before anything is timed: all of it, or for a model whose pass
  // over the pool would take long (a transformer) the prefix of the walk that holds kWalkFlops of
  // full-depth work. Any prefix of the walk holds the scenario's exit shares (batches_for).
  const std::vector<at::Tensor> walk = current.workload->batches_for(c.scenario);
  const size_t walked = walked_batches(config, c.batch, walk.size());
  for (size_t i = 0; i < walked; ++i) current.inputs.push_back(walk[i].to(torch_device(device)).contiguous());
  if (device == Device::cuda) synchronize_cuda_device();

  // One inference first, so that the thresholds' upload is not counted as part of the first. Then,
  // the first time, the untimed pass over the whole pool: warms caches and lazy initialisation, and
  // records what each inference does, so the timed loop holds nothing but the inferences. A case
  // made again only warms up.
  current.strategy->run(current.inputs.front(), current.thresholds);
  current.strategy->finish();
  const auto known = case_records().find(name);
  // A model file's strategies are checked against the module's own forward before they are first
  // timed (a case made again was checked then).
  if (known == case_records().end()) config.family->check_before_use(*current.strategy, current.thresholds, c.batch);
  if (known != case_records().end()) {
    for (size_t i = 0; i < std::min(kWarmupInferences, current.inputs.size()); ++i) {
      current.strategy->run(current.inputs[i], current.thresholds);
      current.strategy->finish();
    }
    current.record = &known->second;
  } else {
    CaseRecord learnt;
    for (const at::Tensor& input : current.inputs)
      learnt.records.push_back(record(current.strategy->observed_run(input, current.thresholds), config));
    current.record = &case_records().emplace(name, std::move(learnt)).first->second;
  }
  current.name = name;  // complete: a failure above leaves no half-made case behind
  return current;
}

void run_case(benchmark::State& state, const BenchmarkCase& c) {
  const Device device = c.strategy->device;
  if (const Unsupported why = why_skipped(c)) {
    state.SkipWithError(("skipped: " + *why).c_str());
    return;
  }
  PreparedCase& p = prepared(c);
  Strategy& strategy = *p.strategy;

  const nvtx::ScopedRange run_range(nvtx::Level::run, c.name());
  const double slowdown =
      test_slowdown(std::string(to_string(device)) + "/" + to_string(c.strategy->engine) + "/" + c.strategy->name);
  // Two instantiations, so an ordinary run's loop holds no test for the knob.
  if (slowdown > 1.0)
    timed_loop<true>(state, strategy, p.inputs, p.thresholds, slowdown);
  else
    timed_loop<false>(state, strategy, p.inputs, p.thresholds, 1.0);
  CaseRecord& rec = *p.record;
  report_counters(state, rec.records, p.workload->config(), c.batch);
  // Where this repetition stands in the run's order: Google Benchmark calls run_case once per
  // iteration count it tries and once per repetition, and keeps the last call's counters, so the
  // numbers that reach the file rise with time (not by one).
  static int64_t sequence = 0;
  state.counters["sequence"] = static_cast<double>(sequence++);
  if (current_round >= 0) state.counters["round"] = static_cast<double>(current_round);
  // GPU time from CUDA events, measured after each repetition's timed loop so the events cost it
  // nothing: a figure per repetition, so the report has an interval of it as of wall time. A quarter
  // of the repetition's inferences, within [kGpuTimedInferencesMin, kGpuTimedInferences].
  if (!rec.shape) {
    InferenceShape shape;
    shape.engine = c.strategy->engine;
    for (const BatchRecord& batch : rec.records) {
      shape.waits_on_host |= batch.counters.host_syncs > 0;
      shape.launches_per_inference =
          std::max(shape.launches_per_inference, static_cast<int64_t>(std::ceil(batch.counters.launches)));
    }
    rec.shape = shape;
  }
  const int gpu_inferences = static_cast<int>(
      std::clamp<int64_t>(static_cast<int64_t>(state.iterations()) / 4, kGpuTimedInferencesMin, kGpuTimedInferences));
  if (const std::optional<double> gpu = gpu_time_us(strategy, p.inputs, p.thresholds, gpu_inferences, *rec.shape))
    // One name per meaning: device time back to back, or a host-waiting inference's span on the GPU's timeline.
    state.counters[rec.shape->waits_on_host ? "gpu_span_us" : "gpu_us"] = *gpu;
  // --trace: a few inferences' spans on the GPU, on a track of their own beside the host's ranges; once per case
  if (!rec.traced && nvtx::records_spans() && nvtx::level() >= nvtx::Level::iter) {
    rec.traced = true;
    for (const auto& [start, end] : gpu_spans_ns(strategy, p.inputs, p.thresholds, kTracedGpuInferences))
      nvtx::record_span(nvtx::kGpuTrack, "inference", start, end);
  }
}

}  // namespace

Unsupported why_skipped(const BenchmarkCase& c) {
  if (c.strategy->device == Device::cuda && !cli::cuda_available()) return "no CUDA device on this machine";
  return c.strategy->unsupported(c.config, c.batch);
}

size_t walked_batches(const ModelConfig& config, int64_t batch, size_t available) {
  const double batch_flops = static_cast<double>(batch) * full_model_flops(config);
  const auto least = static_cast<size_t>((kMinWalkRows + batch - 1) / batch);  // a mix needs rows to hold it
  return std::min(available, std::max(least, static_cast<size_t>(kWalkFlops / batch_flops)));
}

void run_benchmark_case(benchmark::State& state, const BenchmarkCase& c) {
  // Cases whose strategy found in prepare() that it cannot run the model, and why: Google Benchmark
  // calls a case again for each repetition, and the answer will not change.
  static std::map<std::string, std::string> not_runnable;
  const std::string name = c.name();
  if (const auto known = not_runnable.find(name); known != not_runnable.end()) {
    state.SkipWithError(("skipped: " + known->second).c_str());
    return;
  }
  try {
    run_case(state, c);
  } catch (const NotRunnable& e) {
    current_case() = PreparedCase{};
    state.SkipWithError(("skipped: " + not_runnable.emplace(name, one_line(e)).first->second).c_str());
  } catch (const std::exception& e) {
    current_case() = PreparedCase{};  // a case that failed is made afresh if it is run again
    std::string what = e.what();
    state.SkipWithError(("error: " + what.substr(0, what.find('\n'))).c_str());
  }
}

void set_round(int64_t round) { current_round = round; }

void release_prepared_case() { current_case() = PreparedCase{}; }

}  // namespace condbench
