#pragma once
// ConditionalGraph's runtime_api route: the kernels it adds to the graph LibTorch's ops are
// captured into, callable from the C++ side.
#include <cuda_runtime_api.h>

namespace condbench::cuda {

// Sets a conditional node's handle from a flag in device memory: captured ahead of the IF node
// it drives, so the flag an earlier kernel wrote decides whether the body runs.
void launch_set_condition_from(cudaGraphConditionalHandle handle, const bool* flag, cudaStream_t stream);
// Sets a SWITCH node's handle from an int32 in device memory: the body it names runs (a negative
// index, read as unsigned, names none, as one past the last does).
void launch_set_condition_from_index(cudaGraphConditionalHandle handle, const int* index, cudaStream_t stream);

}  // namespace condbench::cuda
