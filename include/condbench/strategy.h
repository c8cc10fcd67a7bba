#pragma once
// The one interface every strategy of a family's inference implements (docs/design.md §2), and its
// entry in the one registry (condbench/strategy_registry.h), where it registers in one line.
// The contract lives here, in the base class: callers use the public, non-virtual run() and
// observed_run(); a strategy implements the protected do_* hooks. What a strategy
// can run is declared by the strategy (a static supports(), found by the registration macro), so
// the harness, the tests and --list ask it rather than checking names.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "condbench/counters.h"
#include "condbench/error.h"
#include "condbench/model.h"
#include "condbench/strategy_registry.h"

namespace condbench {

struct StrategyInfo;

// A result ready on the strategy's device: exit_id int32 [batch] with ids 1..blocks+1, logits
// float32 [batch, num_classes]. Tensors may alias the strategy's buffers: valid until the next run.
// Copying one costs two atomic reference-count updates (and as many to destroy the copy): Strategy
// hands its result out by reference, so the timed loop does neither.
struct ExitOutput {
  at::Tensor exit_id;
  at::Tensor logits;
};

// Why a strategy cannot run a configuration ("needs 80 KiB of shared memory per block, the GPU
// has 48"), or nullopt when it can.
using Unsupported = std::optional<std::string>;

// Thrown by a strategy's prepare() that finds only then that it cannot run the model: a CUDA graph
// that cannot capture a model file's compiled code, which no check before capturing can tell. The
// case is skipped with the reason, as an Unsupported one is, not failed.
class NotRunnable : public Error {
 public:
  using Error::Error;
};

// The answer of a strategy whose arithmetic is the MLP's own (the native engine's kernels and
// loops, written for Linear + ReLU): why it cannot run a model of another family.
Unsupported mlp_only(const ModelConfig& config);

class Strategy {
 public:
  using Info = StrategyInfo;  // its registry entry
  explicit Strategy(Device device) : device_(device) {}
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  Device device() const { return device_; }

  // Whether a strategy of this kind can run `config` at `batch` on `device`. The base answers yes;
  // a strategy with limits declares its own (same signature, static) and the registration finds it.
  static Unsupported supports(const ModelConfig& config, Device device, int64_t batch);
  // What a strategy says of itself, declared the same way (a static member of its own hides
  // these), checked by the tests against its counters and shown by --list:
  // the exit decision is read back to the host, one wait per exit test reached...
  static constexpr bool kHostDecides = false;
  // ...an inference is one launch (a graph, or one kernel), plus the input copy on the torch engine.
  static constexpr bool kSingleLaunch = false;
  // ...the device skips whole blocks (conditional graph nodes): its blocks_run counter is the
  // deepest block any row reached, not every block.
  static constexpr bool kSkipsBlocksOnDevice = false;
  // ...and the final head too, when every row left at an earlier exit (its heads_run counter
  // stops there); without it a strategy that skips blocks still runs the final head's launch.
  static constexpr bool kSkipsFinalHeadOnDevice = false;
  // What was built ahead of the run for `config` on `device` (an AOTInductor package: when, by
  // what, how long it took), for the result file's context; nullopt when nothing was.
  static std::optional<std::string> build_note(const ModelConfig& config, Device device);

  // Everything that allocates, uploads weights or captures graphs, for inputs of `batch` rows.
  virtual void prepare(const EarlyExitModel& model, int64_t batch) = 0;

  // One inference. input: contiguous float32 [batch, row_shape...] on device(); thresholds: one per
  // exit head, on the host. Starts a fresh per-inference record, then calls do_run. Returns with
  // the work enqueued (finish() waits for it); the result is the strategy's own, valid until its
  // next run (copy it to keep it).
  const ExitOutput& run(const at::Tensor& input, const std::vector<float>& thresholds) {
    record_ = {};
    return do_run(input, thresholds);
  }
  // Blocks until the last run's result is ready on the device: nothing on the CPU, one stream
  // synchronisation on CUDA. The harness times it as part of the inference.
  virtual void finish() {}

  // One inference outside the timed region, and what it did: the record do_run kept, completed by
  // do_read_device_counters, with what can be observed counted rather than recorded by hand — for
  // the torch engine, the ATen operators the host dispatched (a RecordFunction callback, top-level
  // calls only) are its launches. run() then finish(); may synchronise with the device. Counters
  // describe steady state: run once with the same thresholds first (an upload is not an inference).
  struct Observed {
    ExitOutput output;
    InferenceCounters counters;
  };
  Observed observed_run(const at::Tensor& input, const std::vector<float>& thresholds);

  // The CUDA stream the strategy's work runs on (a cudaStream_t; the legacy default stream is
  // nullptr), for GPU timing; nullopt for a CPU strategy.
  virtual std::optional<void*> cuda_stream() const { return std::nullopt; }

 protected:
  // One inference; returns output(). A strategy whose results live in buffers made once points
  // output() at them in prepare(), so a run copies nothing, not even a reference count; one that
  // makes new tensors each run returns keep(them).
  virtual const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) = 0;
  ExitOutput& output() { return output_; }
  const ExitOutput& keep(ExitOutput fresh) {
    output_ = std::move(fresh);
    return output_;
  }
  // Counters only the device or the result knows (FLOPs a kernel counted, which stages a graph
  // ran, which exit a compiled forward took), added to the record after the run of `output`.
  // May synchronise.
  virtual void do_read_device_counters(const ExitOutput& /*output*/, InferenceCounters& /*record*/) const {}
  // Whether the host's ATen operator calls are this strategy's launches (the torch engine: yes).
  virtual bool launches_are_aten_calls() const { return false; }

  // The per-inference record: do_run adds to it what the strategy itself knows (host decisions,
  // graph launches, FLOPs of the rows it chose to compute).
  InferenceCounters& record() { return record_; }

 private:
  Device device_;
  InferenceCounters record_;
  ExitOutput output_;
};

// A family's inference strategy in the registry.
struct StrategyInfo : StrategyEntry {
  static constexpr TimedUnit kUnit = TimedUnit::inference;
  StrategyInfo() { unit = kUnit; }
  std::function<std::unique_ptr<Strategy>()> make;
  std::function<Unsupported(const ModelConfig&, Device, int64_t)> supports;
  bool single_launch = false;               // Strategy::kSingleLaunch
  bool skips_blocks_on_device = false;      // Strategy::kSkipsBlocksOnDevice
  bool skips_final_head_on_device = false;  // Strategy::kSkipsFinalHeadOnDevice
  std::function<std::optional<std::string>(const ModelConfig&, Device)> build_note;  // Strategy::build_note

  // Why this strategy cannot run `config` at `batch` (the family's limits on the device, then the
  // strategy's own), or nullopt.
  Unsupported unsupported(const ModelConfig& config, int64_t batch) const;

  // Reads what Type declares from its statics (describe_entry, for CONDBENCH_REGISTER_STRATEGY).
  template <typename Type>
  void read() {
    single_launch = Type::kSingleLaunch;
    skips_blocks_on_device = Type::kSkipsBlocksOnDevice;
    skips_final_head_on_device = Type::kSkipsFinalHeadOnDevice;
    build_note = &Type::build_note;
    declare();
  }
  // Sets `declares` from the booleans.
  void declare();
};

}  // namespace condbench
