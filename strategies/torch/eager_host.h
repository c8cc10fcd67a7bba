#pragma once
// eager_host (engine torch): what a PyTorch user writes first. Every exit test is read back to the
// host, which decides; with batch > 1 the rows that exited are scattered into the output and the
// rest continue compacted, so later blocks run only on rows still active (docs/design.md §2).
// eager_host_pinned is the same code reading each test into pinned memory with an async copy and
// an event sync instead of a blocking copy (strategies/torch/cuda/eager_host_pinned.cpp).
#include <ATen/ATen.h>

#include "condbench/nvtx.h"
#include "torch/torch_strategy.h"

#if CONDBENCH_CUDA
#include "condbench/torch_cuda.h"
#endif

namespace condbench {

class EagerHost : public TorchStrategy {
 public:
  static constexpr bool kHostDecides = true;
  enum class ReadBack { blocking_copy, pinned_event };

  explicit EagerHost(Device device, ReadBack read_back = ReadBack::blocking_copy)
      : TorchStrategy(device), read_back_(read_back) {}

  void prepare(const EarlyExitModel& model, int64_t batch) override;

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override;

 private:
  // The exit test's mask for `active` rows, on the host.
  at::Tensor read_decision(const at::Tensor& fire, int64_t active);
  void write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit_id);

  ReadBack read_back_;
  std::shared_ptr<const TorchLayers> layers_;
  nvtx::StageRanges stages_;
  at::Tensor exit_id_, logits_;
  at::Tensor pinned_;  // ReadBack::pinned_event: where each test lands
#if CONDBENCH_CUDA
  std::unique_ptr<torch_cuda::PinnedReadback> readback_;
#endif
};

}  // namespace condbench
