#pragma once
// eager_host (engine torch): what a PyTorch user writes first. Every exit test is read back to the
// host, which decides; with batch > 1 the rows that exited are scattered into the output and the
// rest continue compacted, so later blocks run only on rows still active (docs/design.md §2).
// eager_host_pinned is the same code reading each test into pinned memory with an async copy and
// an event sync instead of a blocking copy (strategies/torch/cuda/eager_host_pinned.cpp).
#include <ATen/ATen.h>

#include "condbench/nvtx.h"
#include "torch/exit_test_reader.h"
#include "torch/torch_strategy.h"

namespace condbench {

class EagerHost : public TorchStrategy {
 public:
  static constexpr bool kHostDecides = true;

  explicit EagerHost(Device device, ExitTestReader::Mode read_back = ExitTestReader::Mode::blocking_copy)
      : TorchStrategy(device), reader_(read_back) {}

  void prepare(const EarlyExitModel& model, int64_t batch) override;

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override;

 private:
  void write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit_id);

  ExitTestReader reader_;
  std::shared_ptr<const TorchLayers> layers_;
  nvtx::StageRanges stages_;
  at::Tensor exit_id_, logits_;
};

}  // namespace condbench
