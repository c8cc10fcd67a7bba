#pragma once
// Kernels for the primitive microbenchmarks (docs/design.md §4): the smallest units a strategy pays for.
#include <cuda_runtime_api.h>

namespace condbench::cuda {

void launch_empty(cudaStream_t stream);
// Sets a conditional handle to `value` (captured into a graph ahead of the IF node it drives).
void launch_set_condition(cudaGraphConditionalHandle handle, unsigned value, cudaStream_t stream);

}  // namespace condbench::cuda
