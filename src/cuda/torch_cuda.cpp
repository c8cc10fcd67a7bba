#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include "condbench/torch_cuda.h"

namespace condbench::torch_cuda {

const char* conditional_capture_route() {
#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
  return "native_api";
#else
  return "runtime_api";
#endif
}

void* current_stream() { return c10::cuda::getCurrentCUDAStream(0).stream(); }

void synchronize_current_stream() { c10::cuda::getCurrentCUDAStream(0).synchronize(); }

struct PinnedReadback::Event {
  at::cuda::CUDAEvent event;  // created on first record, then reused
};

PinnedReadback::PinnedReadback() : ready_(std::make_unique<Event>()) {}
PinnedReadback::~PinnedReadback() = default;

void PinnedReadback::read(const at::Tensor& device_src, const at::Tensor& pinned_dst) {
  pinned_dst.copy_(device_src, /*non_blocking=*/true);  // a view of the caller's pinned buffer
  ready_->event.record(c10::cuda::getCurrentCUDAStream(0));
  ready_->event.synchronize();
}

}  // namespace condbench::torch_cuda
