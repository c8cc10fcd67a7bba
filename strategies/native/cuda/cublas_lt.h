#pragma once
// cuBLASLt for the native engine's cuBLAS reference (masked_graph_cublas.cpp): a Linear as one
// matmul with its bias and ReLU in cuBLASLt's epilogue, as at::linear runs it on a GPU, so the
// native kernels are measured against cuBLAS inside the same native graph. Every handle and
// descriptor owned (RAII), every call checked with its site: CONDBENCH_CUBLAS_CHECK names the
// call, its file:line and cuBLAS's status.
#include <cublasLt.h>

#include "condbench/cuda/device_model.h"
#include "condbench/cuda/resources.h"

namespace condbench::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
void warn_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept;

}  // namespace condbench::cuda

#define CONDBENCH_CUBLAS_CHECK(call)                                                              \
  do {                                                                                            \
    const cublasStatus_t condbench_cublas_status_ = (call);                                       \
    if (condbench_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::condbench::cuda::throw_cublas_error(condbench_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

namespace condbench::cuda {

// cuBLASLt's destroy functions as resources.h's Owned calls them: a failure is printed, never
// thrown from a destructor, and reported to Owned as nothing more to say.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
cudaError_t destroy_lt(Handle handle) {
  const cublasStatus_t status = Destroy(handle);
  if (status != CUBLAS_STATUS_SUCCESS) warn_cublas_error(status, "Destroy(handle)", __FILE__, __LINE__);
  return cudaSuccess;
}

using LtHandle = Owned<cublasLtHandle_t, destroy_lt<cublasLtHandle_t, cublasLtDestroy>>;
using LtMatmulDesc = Owned<cublasLtMatmulDesc_t, destroy_lt<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using LtLayout = Owned<cublasLtMatrixLayout_t, destroy_lt<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using LtPreference =
    Owned<cublasLtMatmulPreference_t, destroy_lt<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

// A handle and the workspace its matmuls share (they run one after another on one stream).
class CublasLt {
 public:
  CublasLt();
  cublasLtHandle_t get() const { return handle_.get(); }
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.size(); }

 private:
  LtHandle handle_;
  DeviceBuffer<unsigned char> workspace_;
};

// One Linear for `rows` rows as a cuBLASLt matmul, y = act(x W^T + b) in FP32 (no TF32, as the
// native kernels): its descriptors and the algorithm cuBLASLt's heuristic chose for them, made
// once. x is [rows][x_stride] and y [rows][y_stride], row-major.
class LtLinear {
 public:
  LtLinear(const CublasLt& lt, const DeviceLinear& layer, int rows, int x_stride, int y_stride, bool relu);
  void run(const CublasLt& lt, const float* x, float* y, cudaStream_t stream) const;

 private:
  DeviceLinear layer_;
  LtMatmulDesc desc_;
  LtLayout weights_, inputs_, outputs_;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace condbench::cuda
