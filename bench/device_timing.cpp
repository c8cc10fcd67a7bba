#include "device_timing.h"

#if CONDBENCH_CUDA
#include "condbench/cuda/resources.h"
#endif

namespace condbench {

#if CONDBENCH_CUDA

void synchronize_cuda_device() { CONDBENCH_CUDA_CHECK(cudaDeviceSynchronize()); }

std::optional<double> gpu_time_us(Strategy& strategy, const std::vector<at::Tensor>& inputs,
                                  const std::vector<float>& thresholds, int count) {
  const std::optional<void*> handle = strategy.cuda_stream();
  if (!handle || inputs.empty() || count <= 0) return std::nullopt;
  const auto stream = static_cast<cudaStream_t>(*handle);
  const cuda::Event start = cuda::make_event(true), stop = cuda::make_event(true);
  double total_ms = 0.0;
  for (int i = 0; i < count; ++i) {
    CONDBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    strategy.run(inputs[i % inputs.size()], thresholds);
    CONDBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    CONDBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0.0f;
    CONDBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    total_ms += ms;
  }
  strategy.finish();
  return 1000.0 * total_ms / count;
}

#else

void synchronize_cuda_device() {}

std::optional<double> gpu_time_us(Strategy&, const std::vector<at::Tensor>&, const std::vector<float>&, int) {
  return std::nullopt;
}

void register_cuda_primitives() {}

#endif

}  // namespace condbench
