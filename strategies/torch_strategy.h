#pragma once
// What the torch-engine strategies share: on CUDA they run on LibTorch's current stream, which
// finish() synchronises and GPU timing records on.
#include "condbench/strategy.h"
#include "condbench/torch_device.h"

namespace condbench {

class TorchStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  void finish() override;
  std::optional<void*> cuda_stream() const override;
};

}  // namespace condbench
