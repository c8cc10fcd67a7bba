#pragma once
// The interface every strategy of a family timed per generated token implements (docs/design.md
// §8), and its entry in the one registry (condbench/strategy_registry.h): the decoder's today
// (condbench/decoder/strategy.h: DecoderStrategy is TokenStrategy<DecoderModel>), any stateful
// family's tomorrow. step() runs one step for every row of the batch, with what earlier positions
// left (a key/value cache, a recurrent state) in the strategy's own buffers. A strategy is one file
// that registers itself in one line, as every strategy does:
//
//   CONDBENCH_REGISTER_STRATEGY(DecodeMasked, "masked", Engine::torch, Device::cpu,
//                               "every layer for every row; the rows that left frozen with where");
//
// What a strategy can run is declared by it (a static supports(), found by the macro).
#include <ATen/core/Tensor.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "condbench/aten_calls.h"
#include "condbench/counters.h"
#include "condbench/error.h"
#include "condbench/memory_budget.h"  // MemoryNeed
#include "condbench/parameters.h"     // FlatParameters
#include "condbench/strategy.h"       // Unsupported
#include "condbench/strategy_registry.h"

namespace condbench {

// What a family timed per token gives the harness (the strategy base, token_case.h's case and
// token_model_files.h's readers): its weights in its contract's parameter order, and its config,
// which says its sizes by name (the vocabulary, the positions a sequence may fill, the prompt's
// tokens and those a sequence generates), its exits, the position of step t, its benchmark-name
// axes, its one-line description and its tag (the name of its folders), what a batch of its rows
// holds beside the weights (memory_budget.h), and validate(), which throws condbench::Error naming
// what is out of range.
template <typename M>
concept TokenModel = std::copyable<typename M::Config> && requires(const M& model, const typename M::Config& c) {
  { model.config } -> std::convertible_to<typename M::Config>;
  { model.params } -> std::convertible_to<FlatParameters>;
  { c.vocab } -> std::convertible_to<int>;
  { c.context } -> std::convertible_to<int>;
  { c.prompt } -> std::convertible_to<int>;
  { c.generate } -> std::convertible_to<int>;
  { c.num_exits() } -> std::same_as<int>;
  { c.step_position(0) } -> std::same_as<int>;
  { c.name_axes() } -> std::same_as<std::vector<std::pair<std::string, std::string>>>;
  { c.describe() } -> std::same_as<std::string>;
  { c.tag() } -> std::same_as<std::string>;
  { c.memory_need(int64_t{1}) } -> std::same_as<MemoryNeed>;
  c.validate();
};

template <TokenModel Model>
struct TokenStrategyInfo;

// One step's result on the strategy's device, for every row: the next token int64 [batch], the
// exit that produced it int32 [batch] (1..num_exits), and that exit's logits float32 [batch,
// vocab]. May alias the strategy's buffers: valid until its next step or start.
struct TokenOutput {
  at::Tensor token;
  at::Tensor exit_id;
  at::Tensor logits;
};

// What one step did, as the strategy records it (TokenCounters, condbench/counters.h): per step,
// all rows together.
template <TokenModel Model>
class TokenStrategy {
 public:
  using Config = typename Model::Config;
  using Info = TokenStrategyInfo<Model>;  // its registry entry
  explicit TokenStrategy(Device device) : device_(device) {}
  virtual ~TokenStrategy() = default;
  TokenStrategy(const TokenStrategy&) = delete;
  TokenStrategy& operator=(const TokenStrategy&) = delete;

  Device device() const { return device_; }
  static Unsupported supports(const Config& /*config*/, Device /*device*/, int64_t /*batch*/) { return std::nullopt; }
  // What a strategy says of itself, declared as a static member of its own (checked by the tests):
  // the host reads each exit's decision (host_syncs counts them)...
  static constexpr bool kHostDecides = false;
  // ...or every layer and every exit's head run for every row, whatever the decisions...
  static constexpr bool kComputesEveryRow = false;
  // ...or, decided on the device, the layers and heads past an exit run for the whole batch while
  // any row still runs, and are skipped when none does (heads_run is then the batch times the
  // deepest exit any row reached).
  static constexpr bool kSkipsOnDeviceWhenAllLeft = false;

  // Everything that allocates or uploads: buffers for `batch` rows of config.context positions.
  void prepare(const Model& model, int64_t batch) {
    config_ = model.config;
    do_prepare(model, batch);
  }
  // A new sequence per row: the state emptied, and the prompt's first prompt-1 tokens run through
  // every layer (the prefill: not a step, not timed). prompt: int64 [batch, prompt] on device().
  void start(const at::Tensor& prompt) {
    do_start(prompt);
    position_ = config_.step_position(0);
    started_ = true;
  }
  // One generated token per row at the next position: input int64 [batch] on device() (the
  // prompt's last token at step 0, then the previous step's tokens, or anything a test forces);
  // thresholds: one per exit before the final one, on the host. Returns with the work enqueued.
  // (Its refusals say "decode step", the decoder's words, which its tests read.)
  const TokenOutput& step(const at::Tensor& input, const std::vector<float>& thresholds) {
    if (!started_) fail("a decode step before start(): no sequence to continue");
    if (position_ >= config_.context)
      fail("decode step at position " + std::to_string(position_) + ": the context of " +
           std::to_string(config_.context) + " is full");
    record_ = {};
    const TokenOutput& out = do_step(input, thresholds, position_);
    ++position_;
    return out;
  }
  // Waits for the last step's result: nothing on the CPU.
  virtual void finish() {}
  // The CUDA stream its steps run on, for the device timing (gpu_us); nullopt on the CPU.
  virtual std::optional<void*> cuda_stream() const { return std::nullopt; }
  // The last step's, after finish(): what the host recorded, and what a strategy that decides on
  // the device reads back from it (a copy: for the untimed passes only).
  TokenCounters counters() const {
    TokenCounters counted = record_;
    do_read_device_counters(counted);
    return counted;
  }
  // One step as the untimed passes make it: step(), finish(), and counters() with the ATen calls
  // it dispatched counted where the strategy's launches are ATen calls (a RecordFunction callback,
  // never installed for a timed step).
  struct Observed {
    const TokenOutput* output;
    TokenCounters counters;
  };
  Observed observed_step(const at::Tensor& input, const std::vector<float>& thresholds) {
    Observed observed{};
    const int64_t aten_calls =
        aten_calls_of(launches_are_aten_calls(), [&] { observed.output = &step(input, thresholds); });
    finish();
    observed.counters = counters();
    observed.counters.launches += static_cast<double>(aten_calls);
    return observed;
  }
  const Config& config() const { return config_; }

 protected:
  virtual void do_prepare(const Model& model, int64_t batch) = 0;
  virtual void do_start(const at::Tensor& prompt) = 0;
  // The step at `position` (prompt - 1 at step 0).
  virtual const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) = 0;
  TokenCounters& record() { return record_; }
  virtual void do_read_device_counters(TokenCounters& /*counted*/) const {}
  // The torch and aoti engines: `launches` counts the ATen operators a step dispatches.
  virtual bool launches_are_aten_calls() const { return false; }

 private:
  Device device_;
  Config config_;
  TokenCounters record_;
  int position_ = 0;
  bool started_ = false;
};

// A token strategy in the registry: of its family's Model, which StrategyRegistry::of tells apart.
template <TokenModel Model>
struct TokenStrategyInfo : StrategyEntry {
  static constexpr TimedUnit kUnit = TimedUnit::token;
  TokenStrategyInfo() { unit = kUnit; }
  std::function<std::unique_ptr<TokenStrategy<Model>>()> make;
  std::function<Unsupported(const typename Model::Config&, Device, int64_t)> supports;
  bool computes_every_row = false;   // TokenStrategy::kComputesEveryRow
  bool skips_when_all_left = false;  // TokenStrategy::kSkipsOnDeviceWhenAllLeft

  // Reads what Type declares from its statics (describe_entry, for CONDBENCH_REGISTER_STRATEGY).
  template <typename Type>
  void read() {
    computes_every_row = Type::kComputesEveryRow;
    skips_when_all_left = Type::kSkipsOnDeviceWhenAllLeft;
    if (computes_every_row) declares.emplace_back("runs every layer for every row");
    if (skips_when_all_left) declares.emplace_back("skips the deeper layers on the device once every row has left");
  }
};

}  // namespace condbench
