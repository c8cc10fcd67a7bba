#include "torch/torch_strategy.h"

#if CONDBENCH_CUDA
#include "condbench/torch_cuda.h"
#endif

namespace condbench {

void finish_torch_stream([[maybe_unused]] Device device) {
#if CONDBENCH_CUDA
  if (device == Device::cuda) torch_cuda::synchronize_current_stream();
#endif
}

std::optional<void*> torch_stream([[maybe_unused]] Device device) {
#if CONDBENCH_CUDA
  if (device == Device::cuda) return torch_cuda::current_stream();
#endif
  return std::nullopt;
}

}  // namespace condbench
