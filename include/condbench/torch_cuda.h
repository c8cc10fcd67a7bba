#pragma once
// LibTorch's CUDA stream for the torch-engine strategies, behind functions a translation unit
// without the CUDA headers can call. Defined only in builds with the CUDA parts.
#include <ATen/core/Tensor.h>

namespace condbench::torch_cuda {

// The current CUDA stream of LibTorch on device 0 (a cudaStream_t).
void* current_stream();
void synchronize_current_stream();

// How graph_cond (engine torch) builds its IF nodes in this build: "native_api" where LibTorch has
// CUDAGraph::begin_capture_to_if_node, else "runtime_api" (the JSON context reports it).
const char* conditional_capture_route();

// Copies `device_src` into the pinned host tensor `pinned_dst` asynchronously on the current
// stream, records an event behind the copy and waits for that event only (not the whole stream).
void copy_and_wait(const at::Tensor& device_src, const at::Tensor& pinned_dst);

}  // namespace condbench::torch_cuda
