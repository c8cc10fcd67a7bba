#pragma once
// The GPU side of the harness: device synchronisation outside the timed region, and the gpu_us
// counter (GPU time from CUDA events). Without the CUDA parts both do nothing.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "condbench/strategy.h"

namespace condbench {

void synchronize_cuda_device();

// What the untimed pass learnt about one inference of a strategy, which decides how its GPU time
// can be measured.
struct InferenceShape {
  bool waits_on_host = false;          // the host reads a result back mid-inference (host_syncs > 0)
  int64_t launches_per_inference = 1;  // the launches counter: kernels, graphs or ATen calls
  Engine engine = Engine::native;      // what a counted launch is (held_group)
};

// Units (inferences, or a decoder's generated tokens) as the device timing runs them: one after
// another on one CUDA stream. A case kind's prepared case is one (case_runner.h).
class DeviceUnits {
 public:
  virtual ~DeviceUnits() = default;
  // The stream its units run on; nullopt for a strategy without one (the CPU's).
  virtual std::optional<void*> cuda_stream() = 0;
  // How many units may be enqueued back to back from here. At 0, restart() readies more outside
  // any timing: a decoder's sequence has generated its tokens, and a new one is started (its
  // prefill run and finished).
  virtual int64_t ready() const { return std::numeric_limits<int64_t>::max(); }
  virtual void restart() {}
  // Enqueues the next unit.
  virtual void run_next() = 0;
  // Waits for the last unit's work.
  virtual void finish() = 0;
};

// Inferences enqueued behind one hold: as many as keep the kernels they queue under what a
// stream takes before the host blocks in a launch. A counted launch is one kernel or graph on the
// native engine, an ATen call (which may launch several kernels) on the torch engine, and on the
// aoti engine also a package run whose generated kernels are not counted at all; each is weighted
// by a bound on the kernels it queues.
int64_t held_group(const InferenceShape& shape, int64_t count);
// How long the stream's hold waits for `inferences` of that shape to be enqueued before it gives up:
// a base for the host's own work plus a share per kernel queued, far above what enqueueing takes
// (microseconds a kernel) and far below the 2 s a fixed hold cost for each case whose host blocked
// while the stream was held (a re-pointed native graph whose update waits, say): at most about
// 0.06 s for a full group of 256 kernels.
double hold_timeout_s(const InferenceShape& shape, int64_t inferences);

// Mean GPU time in microseconds per unit over `count` units, from CUDA events on the units'
// stream; nullopt for units without one, or when the measurement failed (the hold timed out).
//
// A strategy that never waits on the host is timed as nvbench does: the stream is held by a
// spinning kernel while the start event, the inferences and the stop event are enqueued, then
// released, so the events see the GPU's execution of back-to-back inferences and none of the
// host's enqueueing. A strategy that waits on the host mid-inference cannot be held (the wait
// would never end); its GPU time is the span of each inference on the GPU's timeline, start to
// stop event, which includes the device's idle gaps while the host decides.
std::optional<double> gpu_time_us(DeviceUnits& units, int count, const InferenceShape& shape);

// Where `count` units, one after another, ran on the GPU: each one's start and end between
// two CUDA events on the units' stream, placed on the host's std::chrono::steady_clock (in
// ns) from a reference event the host waited for (so a span may sit a few µs late, the time the
// host took to wake). For --trace's GPU track; empty for units without a CUDA stream.
std::vector<std::pair<int64_t, int64_t>> gpu_spans_ns(DeviceUnits& units, int count);

// Registers the primitive/cuda/... microbenchmarks (docs/design.md §4).
std::vector<std::string> register_cuda_primitives();  // the names registered

}  // namespace condbench
