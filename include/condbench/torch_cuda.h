#pragma once
// LibTorch's CUDA stream for the torch-engine strategies, behind functions a translation unit
// without the CUDA headers can call. Defined only in builds with the CUDA parts.
#include <ATen/core/Tensor.h>

#include <memory>

namespace condbench::torch_cuda {

// The current CUDA stream of LibTorch on device 0 (a cudaStream_t).
void* current_stream();
void synchronize_current_stream();

// How graph_cond (engine torch) builds its IF nodes in this build: "native_api" where LibTorch has
// CUDAGraph::begin_capture_to_if_node, else "runtime_api" (the JSON context reports it).
const char* conditional_capture_route();

// Reads device tensors into pinned host memory: an asynchronous copy on the current stream, an
// event recorded behind it, and a wait on that event only (not the whole stream). The event is
// created once, not per read.
class PinnedReadback {
 public:
  PinnedReadback();
  ~PinnedReadback();
  PinnedReadback(const PinnedReadback&) = delete;
  PinnedReadback& operator=(const PinnedReadback&) = delete;

  void read(const at::Tensor& device_src, const at::Tensor& pinned_dst);

 private:
  struct Event;
  std::unique_ptr<Event> ready_;
};

}  // namespace condbench::torch_cuda
