#pragma once
// Pieces the graph-captured torch strategies share: a side stream to capture on (never the
// default stream), eager warm-up on it (lazy cuBLAS initialisation must not happen inside a
// capture), thresholds in a device tensor that captured kernels read, and the in-place merge of
// one exit's decision into the outputs.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <vector>

#include "condbench/config.h"

namespace condbench {

// Thresholds as a device tensor [blocks], copied only when they change.
class DeviceThresholds {
 public:
  void allocate(int blocks) {
    values_ = at::zeros({blocks}, at::TensorOptions().device(at::kCUDA, 0).dtype(at::kFloat));
    uploaded_.clear();
  }
  const at::Tensor& tensor() const { return values_; }
  at::Tensor at(int k) const { return values_[k]; }
  void update(const std::vector<float>& thresholds) {
    if (thresholds == uploaded_) return;  // a benchmark keeps its thresholds: no copy while timed
    values_.copy_(at::tensor(thresholds, at::kFloat), /*non_blocking=*/false);
    uploaded_ = thresholds;
  }

 private:
  at::Tensor values_;
  std::vector<float> uploaded_;
};

// The fixed tensors a captured graph reads and writes: the input the caller's batch is copied
// into, each row's result, and which rows have been decided.
struct CapturedIO {
  at::Tensor input, logits, exit_id, decided;

  void allocate(const ModelConfig& config, int64_t batch) {
    const auto on_gpu = at::TensorOptions().device(at::kCUDA, 0);
    input = at::zeros({batch, config.in_features}, on_gpu.dtype(at::kFloat));
    logits = at::zeros({batch, config.num_classes}, on_gpu.dtype(at::kFloat));
    exit_id = at::zeros({batch}, on_gpu.dtype(at::kInt));
    decided = at::zeros({batch}, on_gpu.dtype(at::kBool));
  }
};

// Rows in `fire` (already excluding rows decided earlier) leave at `exit_id` with `logits`.
inline void merge_exit(const at::Tensor& fire, const at::Tensor& logits, int exit_id, at::Tensor& out_logits,
                       at::Tensor& out_ids, at::Tensor& decided) {
  out_logits.copy_(at::where(fire.unsqueeze(1), logits, out_logits));
  out_ids.masked_fill_(fire, exit_id);
  decided.logical_or_(fire);
}

}  // namespace condbench
