#include "condbench/cuda/check.h"
#include "condbench/cuda/stream_hold.h"

namespace condbench::cuda {

namespace {

__device__ unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void spin_until_released(volatile int* flags, unsigned long long timeout_ns) {
  const unsigned long long start = global_time_ns();
  while (flags[0] == 0) {
    if (global_time_ns() - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
    __nanosleep(256);  // a gentle poll: the host's write reaches mapped memory within microseconds
  }
}

}  // namespace

StreamHold::StreamHold(double timeout_seconds) : timeout_ns_(static_cast<unsigned long long>(timeout_seconds * 1e9)) {
  void* flags = nullptr;
  CONDBENCH_CUDA_CHECK(cudaHostAlloc(&flags, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flags_ = static_cast<volatile int*>(flags);
  flags_[0] = flags_[1] = 0;
}

StreamHold::~StreamHold() {
  if (flags_) CONDBENCH_CUDA_WARN(cudaFreeHost(const_cast<int*>(flags_)));
}

void StreamHold::hold(cudaStream_t stream) { hold(stream, static_cast<double>(timeout_ns_) * 1e-9); }

void StreamHold::hold(cudaStream_t stream, double timeout_seconds) {
  flags_[0] = 0;
  flags_[1] = 0;
  int* device_flags = nullptr;
  CONDBENCH_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), const_cast<int*>(flags_), 0));
  spin_until_released<<<1, 1, 0, stream>>>(device_flags, static_cast<unsigned long long>(timeout_seconds * 1e9));
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void StreamHold::release() noexcept { flags_[0] = 1; }

}  // namespace condbench::cuda
