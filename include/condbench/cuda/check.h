#pragma once
// Every CUDA runtime call goes through CONDBENCH_CUDA_CHECK, which throws condbench::Error naming
// the call, its file:line and the runtime's message. Destructors, which must not throw, use
// CONDBENCH_CUDA_WARN and print instead.
#include <cuda_runtime_api.h>

namespace condbench::cuda {

[[noreturn]] void throw_error(cudaError_t error, const char* call, const char* file, int line);
void warn_error(cudaError_t error, const char* call, const char* file, int line) noexcept;

}  // namespace condbench::cuda

#define CONDBENCH_CUDA_CHECK(call)                                                     \
  do {                                                                                 \
    const cudaError_t condbench_cuda_status_ = (call);                                 \
    if (condbench_cuda_status_ != cudaSuccess)                                         \
      ::condbench::cuda::throw_error(condbench_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CONDBENCH_CUDA_WARN(call)                                                     \
  do {                                                                                \
    const cudaError_t condbench_cuda_status_ = (call);                                \
    if (condbench_cuda_status_ != cudaSuccess)                                        \
      ::condbench::cuda::warn_error(condbench_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch itself reports errors through cudaGetLastError.
#define CONDBENCH_CUDA_CHECK_LAUNCH() CONDBENCH_CUDA_CHECK(cudaGetLastError())
