#pragma once
// The interface every decoder strategy implements (docs/design.md §8), and its entry in the one
// registry (condbench/strategy_registry.h). The timed unit is one generated token: step() runs one
// decode step for every row of the batch, with the keys and values of earlier positions in the
// strategy's own cache. A strategy is one file that registers itself in one line, as every
// strategy does:
//
//   CONDBENCH_REGISTER_STRATEGY(DecodeMasked, "masked", Engine::torch, Device::cpu,
//                               "every layer for every row; the rows that left frozen with where");
//
// What a strategy can run is declared by it (a static supports(), found by the macro).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "condbench/counters.h"
#include "condbench/decoder/config.h"
#include "condbench/strategy.h"  // Unsupported
#include "condbench/strategy_registry.h"

namespace condbench {

struct DecoderStrategyInfo;

// The decoder's weights, on the host in decoder_parameters() order.
struct DecoderModel {
  DecoderConfig config;
  FlatParameters params;
};

// One decode step's result on the strategy's device, for every row: the next token int64 [batch],
// the exit that produced it int32 [batch] (1..num_exits), and that exit's logits float32 [batch,
// vocab]. May alias the strategy's buffers: valid until its next step or start.
struct DecodeOutput {
  at::Tensor token;
  at::Tensor exit_id;
  at::Tensor logits;
};

// What one step did, as the strategy records it (DecodeCounters, condbench/counters.h): per step,
// all rows together.
class DecoderStrategy {
 public:
  using Info = DecoderStrategyInfo;  // its registry entry
  explicit DecoderStrategy(Device device) : device_(device) {}
  virtual ~DecoderStrategy() = default;
  DecoderStrategy(const DecoderStrategy&) = delete;
  DecoderStrategy& operator=(const DecoderStrategy&) = delete;

  Device device() const { return device_; }
  static Unsupported supports(const DecoderConfig& config, Device device, int64_t batch);
  // What a strategy says of itself, declared as a static member of its own (checked by the tests):
  // the host reads each exit's decision (host_syncs counts them)...
  static constexpr bool kHostDecides = false;
  // ...or every layer and every exit's head run for every row, whatever the decisions...
  static constexpr bool kComputesEveryRow = false;
  // ...or, decided on the device, the layers and heads past an exit run for the whole batch while
  // any row still runs, and are skipped when none does (heads_run is then the batch times the
  // deepest exit any row reached).
  static constexpr bool kSkipsOnDeviceWhenAllLeft = false;

  // Everything that allocates or uploads: caches for `batch` rows of config.context positions.
  void prepare(const DecoderModel& model, int64_t batch) {
    config_ = model.config;
    do_prepare(model, batch);
  }
  // A new sequence per row: the cache emptied, and the prompt's first prompt-1 tokens run through
  // every layer (the prefill: not a decode step, not timed). prompt: int64 [batch, prompt] on device().
  void start(const at::Tensor& prompt) {
    do_start(prompt);
    position_ = config_.step_position(0);
    started_ = true;
  }
  // One generated token per row at the next position: input int64 [batch] on device() (the
  // prompt's last token at step 0, then the previous step's tokens, or anything a test forces);
  // thresholds: one per exit before the final one, on the host. Returns with the work enqueued.
  const DecodeOutput& step(const at::Tensor& input, const std::vector<float>& thresholds) {
    if (!started_) fail("a decode step before start(): no sequence to continue");
    if (position_ >= config_.context)
      fail("decode step at position " + std::to_string(position_) + ": the context of " +
           std::to_string(config_.context) + " is full");
    record_ = {};
    const DecodeOutput& out = do_step(input, thresholds, position_);
    ++position_;
    return out;
  }
  // Waits for the last step's result: nothing on the CPU.
  virtual void finish() {}
  // The CUDA stream its steps run on, for the device timing (gpu_us); nullopt on the CPU.
  virtual std::optional<void*> cuda_stream() const { return std::nullopt; }
  // The last step's, after finish(): what the host recorded, and what a strategy that decides on
  // the device reads back from it (a copy: for the untimed passes only).
  DecodeCounters counters() const {
    DecodeCounters counted = record_;
    do_read_device_counters(counted);
    return counted;
  }
  // One step as the untimed passes make it: step(), finish(), and counters() with the ATen calls
  // it dispatched counted where the strategy's launches are ATen calls (a RecordFunction callback,
  // never installed for a timed step).
  struct Observed {
    const DecodeOutput* output;
    DecodeCounters counters;
  };
  Observed observed_step(const at::Tensor& input, const std::vector<float>& thresholds);
  const DecoderConfig& config() const { return config_; }

 protected:
  virtual void do_prepare(const DecoderModel& model, int64_t batch) = 0;
  virtual void do_start(const at::Tensor& prompt) = 0;
  // The step at `position` (prompt - 1 at step 0).
  virtual const DecodeOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) = 0;
  DecodeCounters& record() { return record_; }
  virtual void do_read_device_counters(DecodeCounters& /*counted*/) const {}
  // The torch and aoti engines: `launches` counts the ATen operators a step dispatches.
  virtual bool launches_are_aten_calls() const { return false; }

 private:
  Device device_;
  DecoderConfig config_;
  DecodeCounters record_;
  int position_ = 0;
  bool started_ = false;
};

// Sets the work of a step in `counted` (layers, heads, FLOPs, bytes; its launches and host syncs
// are left as they are): for `rows` rows that ran each row's first `layers_run` layers in full,
// projected the other layers' keys and values, and evaluated `heads` heads, attention reading
// positions 0..`position` (context - 1 over a fixed-size cache, masked: the graphs, the aoti step).
// Weights count once a step, a row's cache rows once per row.
void count_step_work(DecodeCounters& counted, const DecoderConfig& c, double rows, int layers_run, int heads,
                     int position);

// A decoder strategy in the registry.
struct DecoderStrategyInfo : StrategyEntry {
  static constexpr TimedUnit kUnit = TimedUnit::token;
  DecoderStrategyInfo() { unit = kUnit; }
  std::function<std::unique_ptr<DecoderStrategy>()> make;
  std::function<Unsupported(const DecoderConfig&, Device, int64_t)> supports;
  bool host_decides = false;         // DecoderStrategy::kHostDecides
  bool computes_every_row = false;   // DecoderStrategy::kComputesEveryRow
  bool skips_when_all_left = false;  // DecoderStrategy::kSkipsOnDeviceWhenAllLeft

  // The entry of Type, which CONDBENCH_REGISTER_STRATEGY makes: what it declares read from its statics.
  template <typename Type>
  static std::unique_ptr<const StrategyEntry> describe(const char* name, Engine engine, Device device,
                                                       const char* summary) {
    auto info = new_entry<DecoderStrategyInfo, Type>(name, engine, device, summary);
    info->host_decides = Type::kHostDecides;
    info->computes_every_row = Type::kComputesEveryRow;
    info->skips_when_all_left = Type::kSkipsOnDeviceWhenAllLeft;
    info->declare();
    return info;
  }
  // Sets `declares` from the booleans.
  void declare();
};

}  // namespace condbench
