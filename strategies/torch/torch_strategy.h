#pragma once
// What the torch-engine strategies share: on CUDA they run on LibTorch's current stream, which
// finish() synchronises and GPU timing records on; their launches are the ATen operator calls the
// host makes, counted by observation (Strategy::observed_run), plus the graph replays they record.
#include "condbench/strategy.h"
#include "condbench/torch_device.h"

namespace condbench {

class TorchStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  void finish() override;
  std::optional<void*> cuda_stream() const override;

 protected:
  bool launches_are_aten_calls() const final { return true; }
};

}  // namespace condbench
