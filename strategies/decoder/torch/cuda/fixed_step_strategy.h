#pragma once
// What the decoder's graph strategies (masked_graph, graph_cond) share: the step over fixed-size
// tensors that one CUDA graph replays at every position (TorchDecoder's *_at forms): the caches,
// the tokens the graph reads (the caller's copied in, unless they are the graph's own output),
// the position as a device tensor, the thresholds as one. Each strategy captures its own step.
#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "decoder/torch/torch_decoder_strategy.h"
#include "torch/cuda/torch_graph_support.h"

namespace condbench {

class FixedStepStrategy : public TorchDecoderStrategy {
 public:
  using TorchDecoderStrategy::TorchDecoderStrategy;

 protected:
  // The tensors of a step for `batch` rows, zero (before the strategy warms up and captures).
  void allocate_fixed(const DecoderModel& model, int64_t batch) {
    decoder_ = std::make_unique<TorchDecoder>(model, torch_device(device()));
    cache_ = decoder_->make_cache(batch);
    batch_ = batch;
    const auto on_gpu = at::TensorOptions().device(at::kCUDA, 0);
    input_ = at::zeros({batch}, on_gpu.dtype(at::kLong));
    position_ = at::zeros({1}, on_gpu.dtype(at::kLong));
    thresholds_.allocate(model.config.num_exits() - 1);
  }

  void do_start(const at::Tensor& prompt) override {
    decoder_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  }

  // What a replay reads, set for this step: the thresholds (copied only when they change), the
  // input unless it is the tokens the last replay wrote into input_, the position.
  void set_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) {
    thresholds_.update(thresholds);
    if (!input.is_same(input_)) input_.copy_(input, /*non_blocking=*/true);
    position_.fill_(position);
  }

  // Layer l at the step's position for every row, attending through `visible` (visible_through()).
  at::Tensor layer(int l, const at::Tensor& h, const at::Tensor& visible) {
    return decoder_->layer_at(l, h, cache_, position_, visible);
  }

  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  int64_t batch_ = 0;
  at::Tensor input_, position_;  // what the graph reads: this step's tokens (then its output), the position
  DeviceThresholds thresholds_;
};

}  // namespace condbench
