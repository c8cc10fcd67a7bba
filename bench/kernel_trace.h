#pragma once
// --kernel-trace=FILE: the run under LibTorch's profiler (Kineto, the profiler torch.profiler drives;
// on CUDA through CUPTI), written as a Chrome trace when the run ends: every ATen operator on the host
// and every kernel on the GPU, a CUDA graph's kernels included. For kernel tables
// (python -m condbench.device_check kernels FILE), not for timings: the profiler costs every call.
#include <memory>
#include <string>

namespace condbench {

class KernelTrace {
 public:
  // Starts the profiler: host operators, and with `cuda` the GPU's kernels and copies too.
  KernelTrace(std::string path, bool cuda);
  // Stops it and writes the trace (a temporary beside FILE, renamed into place). Throws
  // condbench::Error when the trace cannot be written.
  void finish();
  ~KernelTrace();  // stops the profiler if finish() was not reached (an error in the run), writing nothing
  KernelTrace(const KernelTrace&) = delete;
  KernelTrace& operator=(const KernelTrace&) = delete;

 private:
  std::string path_;
  bool running_ = false;
};

}  // namespace condbench
