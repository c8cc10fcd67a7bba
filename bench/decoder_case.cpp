#include "decoder_case.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "benchmark_case.h"
#include "cli.h"
#include "condbench/counters.h"
#include "condbench/decoder/torch_decoder.h"
#include "condbench/error.h"
#include "condbench/nvtx.h"
#include "condbench/torch_device.h"
#include "condbench/workload.h"

namespace condbench {

std::string DecoderCase::name() const {
  return case_name(strategy->device, strategy->engine, strategy->name, scenario, batch, config.name_axes());
}

std::vector<DecoderCase> select_decoder_cases(const std::vector<DecoderConfig>& configs,
                                              const std::vector<int64_t>& batches, const std::vector<Device>& devices,
                                              const std::vector<std::string>& strategies,
                                              const std::vector<Scenario>& scenarios) {
  std::vector<DecoderCase> cases;
  for (const DecoderConfig& config : configs) {
    const int blocks = config.num_exits() - 1;
    for (int64_t batch : batches)
      for (const Scenario& scenario : scenarios.empty() ? all_scenarios(blocks) : scenarios) {
        if (!scenario.fits(blocks)) continue;
        for (const DecoderStrategyInfo& info : StrategyRegistry::instance().of<DecoderStrategyInfo>()) {
          if (info.selected(devices, strategies)) cases.push_back({&info, config, batch, scenario});
        }
      }
  }
  return cases;
}

namespace {

// Sequences a case walks: each a prompt per row, started (prefilled) outside the timed region.
constexpr int64_t kSequences = 4;
// Rows whose full-depth generations calibrate the mixes' thresholds, whatever the batch, so that a
// mix means the same thresholds at every batch.
constexpr int64_t kCalibrationRows = 16;
// Steps that warm a case made again before it is timed (its first making walks every sequence).
constexpr int kWarmupSteps = 8;

std::vector<at::Tensor> prompt_sequences(const DecoderConfig& c, int64_t batch, int64_t sequences, uint64_t seed) {
  const at::Tensor all =
      at::tensor(seeded_prompts(c, sequences * batch, seed), at::kLong).reshape({sequences, batch, c.prompt});
  std::vector<at::Tensor> out;
  for (int64_t s = 0; s < sequences; ++s) out.push_back(all[s].contiguous());
  return out;
}

// The confidence at each exit before the final one of every token the model generates at full
// depth from the calibration prompts: row-major [tokens][exits - 1], what calibrate_thresholds reads.
std::vector<float> full_depth_confidences(const DecoderModel& model) {
  const DecoderConfig& c = model.config;
  const TorchDecoder decoder(model, at::Device(at::kCPU));
  const at::Tensor prompts = prompt_sequences(c, kCalibrationRows, 1, kPoolSeed).front();
  KvCache cache = decoder.make_cache(kCalibrationRows);
  decoder.prefill(prompts.narrow(1, 0, c.prompt - 1), cache);
  at::Tensor input = prompts.select(1, c.prompt - 1);
  std::vector<float> confidences;
  for (int t = 0; t < c.generate; ++t) {
    const int position = c.step_position(t);
    at::Tensor h = decoder.embed(input, position);
    std::vector<at::Tensor> at_exit;
    for (int l = 0, exit = 1; l < c.layers; ++l) {
      h = decoder.layer(l, h, cache, {}, position);
      if (exit < c.final_exit() && l + 1 == c.exit_layer(exit)) {
        at_exit.push_back(TorchDecoder::confidence(decoder.logits(h)));
        ++exit;
      }
    }
    input = decoder.logits(h).argmax(-1);
    const at::Tensor rows = at::stack(at_exit, 1).contiguous();
    confidences.insert(confidences.end(), rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
  }
  return confidences;
}

// A model's weights and its scenarios' thresholds, made once per model and kept for the run.
struct DecoderWorkload {
  explicit DecoderWorkload(DecoderModel m) : model(std::move(m)) {}
  DecoderModel model;
  // the mixes calibrated on full_depth_confidences, made at the first mix
  ScenarioThresholds thresholds_for{model.config.num_exits() - 1, [this] { return full_depth_confidences(model); }};
};

DecoderWorkload& workload_for(const DecoderConfig& config) {
  static std::map<std::string, std::unique_ptr<DecoderWorkload>> workloads;
  std::unique_ptr<DecoderWorkload>& w = workloads[config.describe()];
  if (!w)
    w = std::make_unique<DecoderWorkload>(DecoderModel{config, seeded_decoder_parameters(config, kDefaultWeightSeed)});
  return *w;
}

// What the untimed pass over every sequence learnt, per generated token.
struct DecodeRecord {
  TokenCounters per_step;    // means over the steps
  std::vector<double> exits;  // the share of row-tokens leaving at each exit
};

// Every sequence once, untimed: what each step did, averaged over the steps.
DecodeRecord record_sequences(DecoderStrategy& strategy, const std::vector<at::Tensor>& prompts,
                              const std::vector<at::Tensor>& first, const std::vector<float>& thresholds,
                              const DecoderCase& c) {
  DecodeRecord rec;
  rec.exits.assign(c.config.num_exits(), 0.0);
  double steps = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    strategy.start(prompts[s]);
    at::Tensor input = first[s];
    for (int t = 0; t < c.config.generate; ++t) {
      const DecoderStrategy::Observed observed = strategy.observed_step(input, thresholds);
      const TokenOutput& out = *observed.output;
      for (const CounterSpec& spec : kCounters)  // every counter of a step, summed, then their mean
        if (spec.step) rec.per_step.*spec.step += observed.counters.*spec.step;
      const at::Tensor ids = out.exit_id.to(at::kCPU).contiguous();
      for (int64_t r = 0; r < ids.numel(); ++r) rec.exits.at(ids.data_ptr<int32_t>()[r] - 1) += 1.0;
      input = out.token.clone();
      ++steps;
    }
  }
  for (const CounterSpec& spec : kCounters)
    if (spec.step) rec.per_step.*spec.step /= steps;
  for (double& share : rec.exits) share /= steps * static_cast<double>(c.batch);
  return rec;
}

// A decoder case made ready to time: the strategy prepared, its sequences' prompts on the device,
// and what each step does. The timed unit is one generated token for every row; a new sequence
// starts (its prefill outside the timed region) when the last one has generated all its tokens.
class TokenCase final : public PreparedCase {
 public:
  explicit TokenCase(const DecoderCase& c);

  void time(benchmark::State& state, double slowdown) override {
    time_units(
        state, slowdown,
        [&] {
          if (ready() > 0) return;
          state.PauseTiming();
          restart();
          strategy_->finish();
          state.ResumeTiming();
        },
        [this] {
          const nvtx::ScopedRange token(nvtx::Level::iter, nvtx::inference_string());
          run_next();
          strategy_->finish();
        });
  }
  void write_counters(benchmark::State& state) const override;
  InferenceShape shape() const override {
    InferenceShape shape;
    shape.engine = engine_;
    shape.waits_on_host = record_.per_step.host_syncs > 0;
    shape.launches_per_inference = static_cast<int64_t>(std::ceil(record_.per_step.launches));
    return shape;
  }
  std::optional<void*> cuda_stream() override { return strategy_->cuda_stream(); }
  int64_t ready() const override { return generate_ - made_; }
  void restart() override {
    strategy_->start(prompts_[next_]);
    input_ = &first_[next_];
    next_ = (next_ + 1) % prompts_.size();
    made_ = 0;
  }
  void run_next() override {
    input_ = &strategy_->step(*input_, thresholds_).token;  // read by the next step before it writes its own
    ++made_;
  }
  void finish() override { strategy_->finish(); }

 private:
  Engine engine_;
  int64_t batch_;
  int generate_;
  std::unique_ptr<DecoderStrategy> strategy_;
  std::vector<at::Tensor> prompts_;  // [batch, prompt] per sequence, on the strategy's device
  std::vector<at::Tensor> first_;    // each sequence's first input: its prompts' last tokens
  std::vector<float> thresholds_;
  DecodeRecord record_;
  size_t next_ = 0;                    // the sequence restart() starts
  int made_ = 0;                       // tokens the current sequence has generated (generate_: none started)
  const at::Tensor* input_ = nullptr;  // the next step's input
};

TokenCase::TokenCase(const DecoderCase& c)
    : engine_(c.strategy->engine), batch_(c.batch), generate_(c.config.generate), made_(c.config.generate) {
  const std::string name = c.name();
  DecoderWorkload& workload = workload_for(c.config);
  thresholds_ = workload.thresholds_for(c.scenario);
  strategy_ = c.strategy->make();
  strategy_->prepare(workload.model, c.batch);
  const at::Device device = torch_device(c.strategy->device);
  const at::Tensor sequences = decoder_case_prompts(c.config, c.batch);
  for (const at::Tensor& prompt : sequences.unbind(0)) {
    prompts_.push_back(prompt.to(device));
    first_.push_back(prompts_.back().select(1, c.config.prompt - 1).contiguous());
  }
  // The first time, the untimed pass: every sequence once, recording what each step did. Google
  // Benchmark calls a case once per repetition, interleaved with the others, and it is made again
  // each time: then one sequence warms it up, and the record of the first pass is kept.
  static std::map<std::string, DecodeRecord> records;
  const auto known = records.find(name);
  if (known != records.end()) {
    restart();
    for (int t = 0; t < std::min(generate_, kWarmupSteps); ++t) {
      run_next();
      strategy_->finish();
    }
    record_ = known->second;
  } else {
    record_ = record_sequences(*strategy_, prompts_, first_, thresholds_, c);
    records.emplace(name, record_);
  }
  made_ = generate_;  // the timed loop starts a sequence of its own
}

void TokenCase::write_counters(benchmark::State& state) const {
  const double batch = static_cast<double>(batch_);
  for (const CounterSpec& spec : kCounters)  // per token; per_row: per row's token
    if (spec.step)
      state.counters[std::string(spec.name)] =
          record_.per_step.*spec.step / (spec.averaging == Averaging::per_row ? batch : 1.0);
  write_exit_shares(state, record_.exits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch_);  // tokens per second
}

}  // namespace

void register_decoder_cases(const std::vector<DecoderCase>& cases) {
  for (const DecoderCase& c : cases) {
    TimedCase timed;
    timed.name = c.name();
    timed.device = c.strategy->device;
    timed.strategy_path = c.strategy->key();
    timed.why_skipped = [c]() -> Unsupported {
      if (const Unsupported why = cli::device_unavailable(c.strategy->device)) return why;
      return c.strategy->supports(c.config, c.strategy->device, c.batch);
    };
    timed.make = [c]() -> std::unique_ptr<PreparedCase> { return std::make_unique<TokenCase>(c); };
    register_timed_case(std::move(timed));
  }
}

const DecoderModel& decoder_model(const DecoderConfig& config) { return workload_for(config).model; }

const std::vector<float>& decoder_thresholds(const DecoderConfig& config, const Scenario& scenario) {
  return workload_for(config).thresholds_for(scenario);
}

at::Tensor decoder_case_prompts(const DecoderConfig& config, int64_t batch) {
  return at::stack(prompt_sequences(config, batch, kSequences, kPoolSeed + 1));
}

}  // namespace condbench
