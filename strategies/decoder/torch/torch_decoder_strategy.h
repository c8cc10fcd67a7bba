#pragma once
// What the torch engine's decoder strategies share: on CUDA they run on LibTorch's current stream,
// which finish() synchronises.
#include <optional>

#include "condbench/decoder/torch_decoder.h"
#include "condbench/torch_device.h"

namespace condbench {

class TorchDecoderStrategy : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;
  void finish() override;
  // LibTorch's current CUDA stream, where the strategy runs on CUDA (what AOTInductor's runner is
  // given); nullopt on the CPU.
  std::optional<void*> cuda_stream() const override;

 protected:
  bool launches_are_aten_calls() const final { return true; }
};

}  // namespace condbench
