#include "decoder/torch/torch_decoder_strategy.h"

#if CONDBENCH_CUDA
#include "condbench/torch_cuda.h"
#endif

namespace condbench {

void TorchDecoderStrategy::finish() {
#if CONDBENCH_CUDA
  if (device() == Device::cuda) torch_cuda::synchronize_current_stream();
#endif
}

std::optional<void*> TorchDecoderStrategy::cuda_stream() const {
#if CONDBENCH_CUDA
  if (device() == Device::cuda) return torch_cuda::current_stream();
#endif
  return std::nullopt;
}

}  // namespace condbench
