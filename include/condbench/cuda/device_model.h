#pragma once
// The native model's weights on the GPU, uploaded once: one allocation holding every Linear in the
// native layout of exit_math.h, and a device-side table describing them, so kernels can pick a
// layer by stage index read from device memory (the WHILE loop cannot change kernel arguments).
#include "condbench/cuda/resources.h"
#include "condbench/native_model.h"

namespace condbench::cuda {

// One Linear as kernels see it. Layer table: blocks 0..B-1, then heads B..2B (head B+k is exit
// k+1, head 2B is the final head).
struct DeviceLinear {
  const float* wt;    // [in][pitch]
  const float* bias;  // [pitch]
  int in, out, pitch;
};

class DeviceModel {
 public:
  DeviceModel(const NativeModel& model, cudaStream_t stream);

  const ModelConfig& config() const { return config_; }
  const DeviceLinear* table() const { return table_.get(); }  // device pointer

 private:
  ModelConfig config_;
  DeviceBuffer<float> weights_;
  DeviceBuffer<DeviceLinear> table_;
  std::vector<DeviceLinear> host_table_;  // the source of table_'s asynchronous upload: kept alive
};

}  // namespace condbench::cuda
