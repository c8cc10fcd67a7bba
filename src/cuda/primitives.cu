#include "condbench/cuda/check.h"
#include "condbench/cuda/primitives.h"

namespace condbench::cuda {

namespace {
__global__ void empty_kernel() {}
__global__ void set_condition_kernel(cudaGraphConditionalHandle handle, unsigned value) {
  cudaGraphSetConditional(handle, value);
}
}  // namespace

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_set_condition(cudaGraphConditionalHandle handle, unsigned value, cudaStream_t stream) {
  set_condition_kernel<<<1, 1, 0, stream>>>(handle, value);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
