#include "native/cuda/cublas_lt.h"

#include <cstdio>
#include <string>

#include "condbench/error.h"

namespace condbench::cuda {

namespace {
std::string describe(cublasStatus_t status, const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cublasLtGetStatusName(status) +
         " (" + cublasLtGetStatusString(status) + ")";
}

// What cuBLASLt may use beside a matmul: enough for its split-K and stream-K algorithms at these
// sizes; allocated once, so a captured matmul never asks for memory.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

template <typename Value>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

LtLayout layout(int rows, int cols, int leading) {
  cublasLtMatrixLayout_t made = nullptr;
  CONDBENCH_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&made, CUDA_R_32F, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), leading));
  return LtLayout(made);
}
}  // namespace

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // a launch cuBLAS made may have left it: the next healthy call must not see it
  fail(describe(status, call, file, line));
}

void warn_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "condbench: warning: %s\n", describe(status, call, file, line).c_str());
}

CublasLt::CublasLt() : workspace_(kWorkspaceBytes) {
  cublasLtHandle_t made = nullptr;
  CONDBENCH_CUBLAS_CHECK(cublasLtCreate(&made));
  handle_ = LtHandle(made);
}

LtLinear::LtLinear(const CublasLt& lt, const DeviceLinear& layer, int rows, int x_stride, int y_stride, bool relu)
    : layer_(layer) {
  cublasLtMatmulDesc_t made = nullptr;
  // FP32 in, FP32 arithmetic: CUBLAS_COMPUTE_32F excludes TF32, so the results agree with the
  // native kernels' and the reference's as theirs do.
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&made, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  desc_ = LtMatmulDesc(made);
  // Column-major as cuBLAS sees it: the weights [out][in_pitch] row-major are in x out with
  // leading dimension in_pitch, taken transposed; the rows [rows][stride] are in x rows and
  // out x rows. So D (out x rows) = op(A) (out x in) * B (in x rows), then the bias and the ReLU.
  set(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  set(desc_.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
  const void* bias = layer.bias;
  set(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  weights_ = layout(layer.in, layer.out, layer.in_pitch);
  inputs_ = layout(layer.in, rows, x_stride);
  outputs_ = layout(layer.out, rows, y_stride);

  cublasLtMatmulPreference_t preference = nullptr;
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const LtPreference owned(preference);
  const size_t workspace = lt.workspace_bytes();
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                              &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt.get(), desc_.get(), weights_.get(), inputs_.get(),
                                                        outputs_.get(), outputs_.get(), preference, 1, &result,
                                                        &found));
  if (found == 0)
    fail("cuBLASLt has no algorithm for a " + std::to_string(layer.in) + " -> " + std::to_string(layer.out) +
         " Linear at " + std::to_string(rows) + " rows");
  algo_ = result.algo;
}

void LtLinear::run(const CublasLt& lt, const float* x, float* y, cudaStream_t stream) const {
  const float one = 1.0f, zero = 0.0f;  // host scalars: read when the call is made (or captured)
  CONDBENCH_CUBLAS_CHECK(cublasLtMatmul(lt.get(), desc_.get(), &one, layer_.w, weights_.get(), x, inputs_.get(), &zero,
                                        y, outputs_.get(), y, outputs_.get(), &algo_, lt.workspace(),
                                        lt.workspace_bytes(), stream));
}

}  // namespace condbench::cuda
