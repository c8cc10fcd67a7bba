#include "condbench/cuda/device_model.h"

#include "condbench/cuda/linear_plan.h"

namespace condbench::cuda {

namespace {
// Every array starts on a 128-byte boundary: float4 loads need 16, cuBLASLt's bias and matrix
// pointers prefer whole cache lines.
constexpr size_t kAlignFloats = 32;
size_t aligned(size_t floats) { return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }
}  // namespace

DeviceModel::DeviceModel(const NativeModel& model, cudaStream_t stream) : config_(model.config) {
  std::vector<const NativeLinear*> layers;
  for (const NativeLinear& l : model.blocks) layers.push_back(&l);
  for (const NativeLinear& l : model.heads) layers.push_back(&l);
  // Host copies in the upload's order (kept until the copies finish): wt, rows, bias per layer.
  std::vector<std::vector<float>> rows;
  size_t total = 0;
  for (const NativeLinear* l : layers) {
    rows.push_back(rows_layout(*l));
    total += aligned(l->wt.size()) + aligned(rows.back().size()) + aligned(l->bias.size());
  }
  weights_ = DeviceBuffer<float>(total);
  size_t offset = 0;
  const auto upload = [&](const std::vector<float>& host) {
    float* at = weights_.get() + offset;
    CONDBENCH_CUDA_CHECK(cudaMemcpyAsync(at, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    offset += aligned(host.size());
    return at;
  };
  for (size_t k = 0; k < layers.size(); ++k) {
    const NativeLinear& l = *layers[k];
    const float* wt = upload(l.wt);
    const float* w = upload(rows[k]);
    const float* bias = upload(l.bias);
    host_table_.push_back({wt, w, bias, l.in, l.out, l.pitch, vector_padded(l.in)});
  }
  table_ = DeviceBuffer<DeviceLinear>(host_table_.size());
  CONDBENCH_CUDA_CHECK(cudaMemcpyAsync(table_.get(), host_table_.data(), host_table_.size() * sizeof(DeviceLinear),
                                       cudaMemcpyHostToDevice, stream));
  // The host vectors are pageable and go out of scope with the caller's model: finish the copies.
  CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace condbench::cuda
