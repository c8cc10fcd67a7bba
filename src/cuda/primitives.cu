#include "condbench/cuda/check.h"
#include "condbench/cuda/primitives.h"

namespace condbench::cuda {

namespace {
__global__ void empty_kernel() {}
__global__ void set_condition_kernel(cudaGraphConditionalHandle handle, unsigned value) {
  cudaGraphSetConditional(handle, value);
}
__global__ void set_condition_from_kernel(cudaGraphConditionalHandle handle, const bool* flag) {
  cudaGraphSetConditional(handle, *flag ? 1u : 0u);
}
}  // namespace

void launch_set_condition_from(cudaGraphConditionalHandle handle, const bool* flag, cudaStream_t stream) {
  set_condition_from_kernel<<<1, 1, 0, stream>>>(handle, flag);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_set_condition(cudaGraphConditionalHandle handle, unsigned value, cudaStream_t stream) {
  set_condition_kernel<<<1, 1, 0, stream>>>(handle, value);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
