#pragma once
// The native model's weights on the GPU, uploaded once: one allocation holding every Linear, and a
// device-side table describing them, so kernels can pick a layer by stage index read from device
// memory (the WHILE loop cannot change kernel arguments). Each Linear is there in two layouts, for
// the two ways the kernels read it: transposed (exit_math.h's native layout), where a thread
// computes one output and a warp reads 32 consecutive outputs' weights; and torch's [out][in]
// (linear_plan.h's rows_layout), where a warp computes one output and reads its row as float4.
#include "condbench/cuda/resources.h"
#include "condbench/native_model.h"

namespace condbench::cuda {

// One Linear as kernels see it. Layer table: blocks 0..B-1, then heads B..2B (head B+k is exit
// k+1, head 2B is the final head).
struct DeviceLinear {
  const float* wt;    // [in][pitch]: the single-block fused kernel's
  const float* w;     // [out][in_pitch]: the GEMV and GEMM kernels'
  const float* bias;  // [pitch], zero past out
  int in, out, pitch, in_pitch;
};

class DeviceModel {
 public:
  DeviceModel(const NativeModel& model, cudaStream_t stream);

  const ModelConfig& config() const { return config_; }
  const DeviceLinear* table() const { return table_.get(); }                   // device pointer
  const std::vector<DeviceLinear>& host_table() const { return host_table_; }  // the same, on the host

 private:
  ModelConfig config_;
  DeviceBuffer<float> weights_;
  DeviceBuffer<DeviceLinear> table_;
  std::vector<DeviceLinear> host_table_;  // the source of table_'s asynchronous upload: kept alive
};

}  // namespace condbench::cuda
