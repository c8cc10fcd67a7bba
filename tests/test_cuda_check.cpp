// CONDBENCH_CUDA_CHECK's failure path without a GPU: the error names the call and its file:line,
// and the runtime's last error is read and reset before the exception leaves (with a fake reset
// standing in for cudaGetLastError, which on a machine without a driver reports the missing driver
// forever). On a GPU, tests/gpu/test_cuda_recovery.cpp checks the same against the real runtime.
#include <gtest/gtest.h>

#include <string>

#include "condbench/cuda/check.h"
#include "condbench/error.h"

namespace condbench::testing {
namespace {

int resets = 0;
cudaError_t fake_reset() {
  ++resets;
  return cudaErrorInvalidValue;
}

TEST(CudaCheck, AFailureResetsTheLastErrorAndNamesTheCall) {
  resets = 0;
  try {
    cuda::throw_error(cudaErrorInvalidValue, "cudaMemcpyAsync(dst, src, n, kind, stream)", "src/x.cpp", 42, fake_reset);
    FAIL() << "throw_error returned";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaMemcpyAsync(dst, src, n, kind, stream) failed at src/x.cpp:42"), std::string::npos)
        << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
  }
  EXPECT_EQ(resets, 1);
}

TEST(CudaCheck, AWarningResetsTheLastErrorToo) {
  resets = 0;
  ::testing::internal::CaptureStderr();
  cuda::warn_error(cudaErrorInvalidValue, "cudaFree(p)", "src/y.cpp", 7, fake_reset);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(resets, 1);
  EXPECT_NE(printed.find("warning: cudaFree(p) failed at src/y.cpp:7"), std::string::npos) << printed;
}

}  // namespace
}  // namespace condbench::testing
