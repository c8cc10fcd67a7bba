#pragma once
// Every CUDA runtime call goes through CONDBENCH_CUDA_CHECK, which throws condbench::Error naming
// the call, its file:line and the runtime's message. Destructors, which must not throw, use
// CONDBENCH_CUDA_WARN and print instead.
//
// Both clear the runtime's last-error state before they report (as nvbench's NVBENCH_CUDA_CALL
// does): a non-sticky error left behind would otherwise surface again in the next healthy call
// that checks cudaGetLastError() — the next kernel launch of the next benchmark — and fail a case
// that did nothing wrong.
#include <cuda_runtime_api.h>

namespace condbench::cuda {

// How the runtime's last error is read and reset; cudaGetLastError in production, a fake in the
// host tests (no GPU there to produce a real error).
using ErrorReset = cudaError_t (*)();

[[noreturn]] void throw_error(cudaError_t error, const char* call, const char* file, int line,
                              ErrorReset reset = cudaGetLastError);
void warn_error(cudaError_t error, const char* call, const char* file, int line,
                ErrorReset reset = cudaGetLastError) noexcept;

}  // namespace condbench::cuda

#define CONDBENCH_CUDA_CHECK(call)                                                       \
  do {                                                                                   \
    const cudaError_t condbench_cuda_status_ = (call);                                   \
    if (condbench_cuda_status_ != cudaSuccess)                                           \
      ::condbench::cuda::throw_error(condbench_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CONDBENCH_CUDA_WARN(call)                                                       \
  do {                                                                                  \
    const cudaError_t condbench_cuda_status_ = (call);                                  \
    if (condbench_cuda_status_ != cudaSuccess)                                          \
      ::condbench::cuda::warn_error(condbench_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch itself reports errors through cudaGetLastError.
#define CONDBENCH_CUDA_CHECK_LAUNCH() CONDBENCH_CUDA_CHECK(cudaGetLastError())
