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

void copy_and_wait(const at::Tensor& device_src, const at::Tensor& pinned_dst) {
  // const_cast-free: copy_ on a view of the pinned buffer writes the caller's memory.
  at::Tensor destination = pinned_dst;
  destination.copy_(device_src, /*non_blocking=*/true);
  at::cuda::CUDAEvent ready;
  ready.record(c10::cuda::getCurrentCUDAStream(0));
  ready.synchronize();
}

}  // namespace condbench::torch_cuda
