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

// walked_batches: the most full-depth work one pass over the inputs a case walks may hold (FLOPs),
// and the fewest rows: the default mlp walks its whole pool, the default transformer 64 rows of it
// (batch 1), a BERT-base encoder 64.
constexpr double kWalkFlops = 2e10;
constexpr int64_t kMinWalkRows = 64;

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
  std::vector<double> shares;
  for (const double rows_leaving : exits) shares.push_back(rows_leaving / rows);
  write_exit_shares(state, shares);
  state.SetItemsProcessed(iterations * batch);  // rows per second
}

// What one case's untimed pass learnt, kept for the run: the records of each pool batch. Google
// Benchmark calls a benchmark's function once per iteration count it tries and once per
// repetition; interleaved, the case changes between calls and is made again, and its second and
// later repetitions take this from the first instead of walking the pool again (a transformer's
// walk takes longer than a repetition's timed loop). Small: a few counters per batch.
struct CaseRecord {
  std::vector<BatchRecord> records;
  InferenceShape shape;  // how its GPU time is taken, from the records
};

std::map<std::string, CaseRecord>& case_records() {
  static std::map<std::string, CaseRecord> records;
  return records;
}

// Inferences run before a remade case is timed again: its caches and lazy state warm, as the untimed
// pass left them the first time.
constexpr size_t kWarmupInferences = 8;

// A family's case made ready to time: the strategy prepared, the pool on its device, and what each
// inference does. The timed unit is one inference, walking the pool.
class InferenceCase final : public PreparedCase {
 public:
  explicit InferenceCase(const BenchmarkCase& c);

  void time(benchmark::State& state, double slowdown) override {
    time_units(
        state, slowdown, [] {}, [this] { run_one(); });
  }
  void write_counters(benchmark::State& state) const override {
    report_counters(state, record_->records, workload_->config(), batch_);
  }
  InferenceShape shape() const override { return record_->shape; }
  std::optional<void*> cuda_stream() override { return strategy_->cuda_stream(); }
  void run_next() override { strategy_->run(inputs_[next_++ % inputs_.size()], thresholds_); }
  void finish() override { strategy_->finish(); }

 private:
  void run_one() {
    const nvtx::ScopedRange iteration(nvtx::Level::iter, nvtx::inference_string());
    const ExitOutput* out = &strategy_->run(inputs_[next_], thresholds_);
    strategy_->finish();
    benchmark::DoNotOptimize(out);  // a non-const lvalue: Google Benchmark 1.8 deprecates the const& overload
    if (++next_ == inputs_.size()) next_ = 0;
  }

  std::shared_ptr<const Workload> workload_;
  int64_t batch_;
  std::vector<float> thresholds_;
  std::unique_ptr<Strategy> strategy_;
  std::vector<at::Tensor> inputs_;
  size_t next_ = 0;
  const CaseRecord* record_ = nullptr;  // in case_records()
};

InferenceCase::InferenceCase(const BenchmarkCase& c) : batch_(c.batch) {
  const std::string name = c.name();
  const Device device = c.strategy->device;
  workload_ = shared_workload(c.source, c.batch);
  const ModelConfig& config = workload_->config();
  thresholds_ = workload_->thresholds(c.scenario);
  strategy_ = c.strategy->make();
  strategy_->prepare(workload_->model(), c.batch);

  // The pool goes to the device before anything is timed: all of it, or for a model whose pass
  // over the pool would take long (a transformer) the prefix of the walk that holds kWalkFlops of
  // full-depth work. Any prefix of the walk holds the scenario's exit shares (batches_for).
  const std::vector<at::Tensor> walk = workload_->batches_for(c.scenario);
  const size_t walked = walked_batches(config, c.batch, walk.size());
  for (size_t i = 0; i < walked; ++i) inputs_.push_back(walk[i].to(torch_device(device)).contiguous());
  if (device == Device::cuda) synchronize_cuda_device();

  // One inference first, so that the thresholds' upload is not counted as part of the first. Then,
  // the first time, the untimed pass over the whole pool: warms caches and lazy initialisation, and
  // records what each inference does, so the timed loop holds nothing but the inferences. A case
  // made again only warms up.
  strategy_->run(inputs_.front(), thresholds_);
  strategy_->finish();
  const auto known = case_records().find(name);
  if (known != case_records().end()) {
    for (size_t i = 0; i < std::min(kWarmupInferences, inputs_.size()); ++i) {
      strategy_->run(inputs_[i], thresholds_);
      strategy_->finish();
    }
    record_ = &known->second;
    return;
  }
  // A model file's strategies are checked against the module's own forward before they are first
  // timed (a case made again was checked then).
  config.family->check_before_use(*strategy_, thresholds_, c.batch);
  CaseRecord learnt;
  learnt.shape.engine = c.strategy->engine;
  for (const at::Tensor& input : inputs_) {
    learnt.records.push_back(record(strategy_->observed_run(input, thresholds_), config));
    const InferenceCounters& counted = learnt.records.back().counters;
    learnt.shape.waits_on_host |= counted.host_syncs > 0;
    learnt.shape.launches_per_inference =
        std::max(learnt.shape.launches_per_inference, static_cast<int64_t>(std::ceil(counted.launches)));
  }
  record_ = &case_records().emplace(name, std::move(learnt)).first->second;
}

}  // namespace

Unsupported why_skipped(const BenchmarkCase& c) {
  if (const Unsupported why = cli::device_unavailable(c.strategy->device)) return why;
  return c.strategy->unsupported(c.config, c.batch);
}

size_t walked_batches(const ModelConfig& config, int64_t batch, size_t available) {
  const double batch_flops = static_cast<double>(batch) * full_model_flops(config);
  const auto least = static_cast<size_t>((kMinWalkRows + batch - 1) / batch);  // a mix needs rows to hold it
  return std::min(available, std::max(least, static_cast<size_t>(kWalkFlops / batch_flops)));
}

TimedCase timed_case(const BenchmarkCase& c) {
  TimedCase timed;
  timed.name = c.name();
  timed.device = c.strategy->device;
  timed.strategy_path = c.strategy->key();
  timed.why_skipped = [c] { return why_skipped(c); };
  timed.make = [c]() -> std::unique_ptr<PreparedCase> { return std::make_unique<InferenceCase>(c); };
  return timed;
}

}  // namespace condbench
