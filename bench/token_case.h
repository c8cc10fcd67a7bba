#pragma once
// One registered benchmark of a family timed per generated token (docs/design.md §8): a token
// strategy generating tokens under a scenario, and the prepared case case_runner.h times, for any
// family's Model (token_strategy.h; the decoder's is decoder_case.h's). What the family gives is
// its work (TokenWork): the seeded model, a scenario's thresholds, the prompts a case walks, the
// models condbench's flags select and a model's --export-workload folder.
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "benchmark_case.h"  // case_name
#include "case_runner.h"
#include "cli.h"
#include "condbench/counters.h"
#include "condbench/nvtx.h"
#include "condbench/scenario.h"
#include "condbench/token_strategy.h"
#include "condbench/torch_device.h"

namespace condbench {

template <TokenModel Model>
struct TokenCase {
  using Config = typename Model::Config;
  const TokenStrategyInfo<Model>* strategy = nullptr;
  Config config;
  int64_t batch = 1;
  Scenario scenario;

  // early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/model:<family>/<size>:<n>/.../blocks:<exits - 1>
  std::string name() const {
    return case_name(strategy->device, strategy->engine, strategy->name, scenario, batch, config.name_axes());
  }
};

// What a token family gives its cases: made once per config and kept for the run.
template <TokenModel Model>
struct TokenWork {
  using Config = typename Model::Config;
  const Model& (*model)(const Config&);  // its seeded weights
  // A scenario's thresholds: forced, or calibrated on the model's full-depth generations.
  const std::vector<float>& (*thresholds)(const Config&, const Scenario&);
  at::Tensor (*prompts)(const Config&, int64_t batch);  // int64 [sequences, batch, prompt]
  // The models condbench's flags select: the family's default (with --full, its extras too), each
  // size a flag's values. Throws condbench::Error naming the flag.
  std::vector<Config> (*configs)(const std::map<std::string, std::string>& flags, bool full);
  // --export-workload: writes one model's files for the Python peer into `folder` (for the scenarios
  // its cases run) and returns its workload.json.
  nlohmann::json (*export_model)(const Config&, const std::set<Scenario>&, const std::filesystem::path& folder);
};

// Every token strategy of Model on `devices` named in `strategies` (empty: all) x config x batch x
// scenario (empty: every exit:K of the config, then the mixes).
template <TokenModel Model>
std::vector<TokenCase<Model>> select_token_cases(const std::vector<typename Model::Config>& configs,
                                                 const std::vector<int64_t>& batches,
                                                 const std::vector<Device>& devices,
                                                 const std::vector<std::string>& strategies,
                                                 const std::vector<Scenario>& scenarios) {
  std::vector<TokenCase<Model>> cases;
  for (const auto& config : configs) {
    const int blocks = config.num_exits() - 1;
    for (int64_t batch : batches)
      for (const Scenario& scenario : scenarios.empty() ? all_scenarios(blocks) : scenarios) {
        if (!scenario.fits(blocks)) continue;
        for (const TokenStrategyInfo<Model>& info : StrategyRegistry::instance().of<TokenStrategyInfo<Model>>())
          if (info.selected(devices, strategies)) cases.push_back({&info, config, batch, scenario});
      }
  }
  return cases;
}

namespace token_case_detail {

// Steps that warm a case made again before it is timed (its first making walks every sequence).
inline constexpr int kWarmupSteps = 8;

// What the untimed pass over every sequence learnt, per generated token.
struct Record {
  TokenCounters per_step;     // means over the steps
  std::vector<double> exits;  // the share of row-tokens leaving at each exit
};

// Every sequence once, untimed: what each step did, averaged over the steps.
template <TokenModel Model>
Record record_sequences(TokenStrategy<Model>& strategy, const std::vector<at::Tensor>& prompts,
                        const std::vector<at::Tensor>& first, const std::vector<float>& thresholds,
                        const TokenCase<Model>& c) {
  Record rec;
  rec.exits.assign(c.config.num_exits(), 0.0);
  double steps = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    strategy.start(prompts[s]);
    at::Tensor input = first[s];
    for (int t = 0; t < c.config.generate; ++t) {
      const auto observed = strategy.observed_step(input, thresholds);
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

// A token case made ready to time: the strategy prepared, its sequences' prompts on the device,
// and what each step does. The timed unit is one generated token for every row; a new sequence
// starts (its prefill outside the timed region) when the last one has generated all its tokens.
template <TokenModel Model>
class Prepared final : public PreparedCase {
 public:
  Prepared(const TokenCase<Model>& c, const TokenWork<Model>& work)
      : engine_(c.strategy->engine), batch_(c.batch), generate_(c.config.generate), made_(c.config.generate) {
    const std::string name = c.name();
    thresholds_ = work.thresholds(c.config, c.scenario);
    strategy_ = c.strategy->make();
    strategy_->prepare(work.model(c.config), c.batch);
    const at::Device device = torch_device(c.strategy->device);
    for (const at::Tensor& prompt : work.prompts(c.config, c.batch).unbind(0)) {
      prompts_.push_back(prompt.to(device));
      first_.push_back(prompts_.back().select(1, c.config.prompt - 1).contiguous());
    }
    // The first time, the untimed pass: every sequence once, recording what each step did. Google
    // Benchmark calls a case once per repetition, interleaved with the others, and it is made again
    // each time: then one sequence warms it up, and the record of the first pass is kept.
    static std::map<std::string, Record> records;
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
  void write_counters(benchmark::State& state) const override {
    const double batch = static_cast<double>(batch_);
    for (const CounterSpec& spec : kCounters)  // per token; per_row: per row's token
      if (spec.step)
        state.counters[std::string(spec.name)] =
            record_.per_step.*spec.step / (spec.averaging == Averaging::per_row ? batch : 1.0);
    write_exit_shares(state, record_.exits);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch_);  // tokens per second
  }
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
  std::unique_ptr<TokenStrategy<Model>> strategy_;
  std::vector<at::Tensor> prompts_;  // [batch, prompt] per sequence, on the strategy's device
  std::vector<at::Tensor> first_;    // each sequence's first input: its prompts' last tokens
  std::vector<float> thresholds_;
  Record record_;
  size_t next_ = 0;                    // the sequence restart() starts
  int made_ = 0;                       // tokens the current sequence has generated (generate_: none started)
  const at::Tensor* input_ = nullptr;  // the next step's input
};

}  // namespace token_case_detail

// Registers each case with the runner (case_runner.h), its work from the family's `work`; returns
// their benchmarks.
template <TokenModel Model>
std::vector<benchmark::internal::Benchmark*> register_token_cases(const std::vector<TokenCase<Model>>& cases,
                                                                  const TokenWork<Model>& work) {
  std::vector<benchmark::internal::Benchmark*> registered;
  for (const TokenCase<Model>& c : cases) {
    TimedCase timed;
    timed.name = c.name();
    timed.device = c.strategy->device;
    timed.strategy_path = c.strategy->key();
    timed.why_skipped = [c]() -> Unsupported {
      if (const Unsupported why = cli::device_unavailable(c.strategy->device)) return why;
      return c.strategy->supports(c.config, c.strategy->device, c.batch);
    };
    timed.make = [c, work]() -> std::unique_ptr<PreparedCase> {
      return std::make_unique<token_case_detail::Prepared<Model>>(c, work);
    };
    registered.push_back(register_timed_case(std::move(timed)));
  }
  return registered;
}

}  // namespace condbench
