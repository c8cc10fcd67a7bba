#include "condbench/cuda/device_model.h"

namespace condbench::cuda {

DeviceModel::DeviceModel(const NativeModel& model, cudaStream_t stream) : config_(model.config) {
  std::vector<const NativeLinear*> layers;
  for (const NativeLinear& l : model.blocks) layers.push_back(&l);
  for (const NativeLinear& l : model.heads) layers.push_back(&l);
  size_t total = 0;
  for (const NativeLinear* l : layers) total += l->wt.size() + l->bias.size();
  weights_ = DeviceBuffer<float>(total);
  size_t offset = 0;
  for (const NativeLinear* l : layers) {
    float* wt = weights_.get() + offset;
    float* bias = wt + l->wt.size();
    CONDBENCH_CUDA_CHECK(
        cudaMemcpyAsync(wt, l->wt.data(), l->wt.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    CONDBENCH_CUDA_CHECK(
        cudaMemcpyAsync(bias, l->bias.data(), l->bias.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    host_table_.push_back({wt, bias, l->in, l->out, l->pitch});
    offset += l->wt.size() + l->bias.size();
  }
  table_ = DeviceBuffer<DeviceLinear>(host_table_.size());
  CONDBENCH_CUDA_CHECK(cudaMemcpyAsync(table_.get(), host_table_.data(), host_table_.size() * sizeof(DeviceLinear),
                                       cudaMemcpyHostToDevice, stream));
  // The host vectors are pageable and go out of scope with the caller's model: finish the copies.
  CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace condbench::cuda
