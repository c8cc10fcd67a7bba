#include "condbench/cuda/check.h"
#include "torch/cuda/conditional_graph_kernels.h"

namespace condbench::cuda {

namespace {
__global__ void set_condition_from_kernel(cudaGraphConditionalHandle handle, const bool* flag) {
  cudaGraphSetConditional(handle, *flag ? 1u : 0u);
}
}  // namespace

void launch_set_condition_from(cudaGraphConditionalHandle handle, const bool* flag, cudaStream_t stream) {
  set_condition_from_kernel<<<1, 1, 0, stream>>>(handle, flag);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
