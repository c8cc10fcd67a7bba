#include "condbench/cuda/check.h"
#include "torch/cuda/conditional_graph_kernels.h"

namespace condbench::cuda {

namespace {
__global__ void set_condition_from_kernel(cudaGraphConditionalHandle handle, const bool* flag) {
  cudaGraphSetConditional(handle, *flag ? 1u : 0u);
}
__global__ void set_condition_from_index_kernel(cudaGraphConditionalHandle handle, const int* index) {
  cudaGraphSetConditional(handle, static_cast<unsigned>(*index));
}
}  // namespace

void launch_set_condition_from(cudaGraphConditionalHandle handle, const bool* flag, cudaStream_t stream) {
  set_condition_from_kernel<<<1, 1, 0, stream>>>(handle, flag);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_set_condition_from_index(cudaGraphConditionalHandle handle, const int* index, cudaStream_t stream) {
  set_condition_from_index_kernel<<<1, 1, 0, stream>>>(handle, index);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
