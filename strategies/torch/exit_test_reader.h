#pragma once
// How a torch-engine strategy that decides on the host reads an exit test back, whatever its timed
// unit (eager_host, its decoder's twin): a blocking device->host copy (a `.item()`-style read), or
// into pinned memory with an async copy and an event wait (the *_pinned strategies).
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

#include "condbench/strategy_registry.h"

#if CONDBENCH_CUDA
#include "condbench/torch_cuda.h"
#endif

namespace condbench {

class ExitTestReader {
 public:
  enum class Mode { blocking_copy, pinned_event };
  explicit ExitTestReader(Mode mode = Mode::blocking_copy) : mode_(mode) {}

  // Makes the pinned landing for tests of up to `rows` rows (nothing for a blocking copy, or without
  // CUDA). Untimed: in the strategy's prepare.
  void prepare(int64_t rows);
  // The first `rows` values of `fire` (bool, on the strategy's device) on the host. In the timed
  // path, so here, where the strategy's loop can inline it.
  at::Tensor read(const at::Tensor& fire, [[maybe_unused]] int64_t rows) {
#if CONDBENCH_CUDA
    if (mode_ == Mode::pinned_event) {
      at::Tensor landing = pinned_.narrow(0, 0, rows);
      readback_->read(fire, landing);
      return landing;
    }
#endif
    return fire.to(at::kCPU);  // on CUDA: a device->host copy that waits for the stream
  }

 private:
  Mode mode_;
  at::Tensor pinned_;  // Mode::pinned_event: where each test lands
#if CONDBENCH_CUDA
  std::unique_ptr<torch_cuda::PinnedReadback> readback_;
#endif
};

}  // namespace condbench
