#include "condbench/cuda/check.h"

#include <cstdio>
#include <string>

#include "condbench/error.h"

namespace condbench::cuda {

namespace {
std::string describe(cudaError_t error, const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorName(error) + " (" +
         cudaGetErrorString(error) + ")";
}
}  // namespace

void throw_error(cudaError_t error, const char* call, const char* file, int line, ErrorReset reset) {
  (void)reset();  // the error is reported here; it must not fail the next call that checks
  fail(describe(error, call, file, line));
}

void warn_error(cudaError_t error, const char* call, const char* file, int line, ErrorReset reset) noexcept {
  (void)reset();
  std::fprintf(stderr, "condbench: warning: %s\n", describe(error, call, file, line).c_str());
}

}  // namespace condbench::cuda
