#pragma once
// What the torch engine's decoder strategies share: on CUDA they run on LibTorch's current stream,
// which finish() synchronises.
#include "condbench/decoder/torch_decoder.h"
#include "condbench/torch_device.h"

namespace condbench {

class TorchDecoderStrategy : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;
  void finish() override;
};

}  // namespace condbench
