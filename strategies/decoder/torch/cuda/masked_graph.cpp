// masked_graph (decoder, engine torch, CUDA): `masked` over fixed-size tensors, captured once into
// a CUDA graph and replayed for every token. The position is a device tensor the step reads (its
// keys and values written there by index_copy_, attention over the whole cache through a mask of
// the positions so far), so one graph serves every position; the thresholds are a device tensor
// too. Per token the host issues the input copy, the position's update and the replay.
#include <ATen/cuda/CUDAGraph.h>

#include "decoder/torch/cuda/fixed_step_strategy.h"
#include "decoder/torch/masked_step.h"

namespace condbench {
namespace {

class DecodeMaskedGraph final : public FixedStepStrategy {
 public:
  using FixedStepStrategy::FixedStepStrategy;
  static constexpr bool kComputesEveryRow = true;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    allocate_fixed(model, batch);
    const at::cuda::CUDAStream side = capture_stream();
    {
      const c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 3; ++i) step();  // warm-up: cuBLAS handles and workspaces exist before capture
      side.synchronize();
      TorchGraphCapture capture(graph_, at::cuda::graph_pool_handle());
      output_ = step();
      capture.end();
    }
    side.synchronize();
  }

  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    const DecoderConfig& c = config();
    set_step(input, thresholds, position);
    graph_.replay();
    record().launches += 1;  // the replay; the copies before it are ATen calls, counted as such
    // Attention reads the whole cache, masked: the work of every position, whatever the step's.
    count_step_work(record(), c, static_cast<double>(batch_), c.layers, c.num_exits(), c.context - 1);
    return output_;
  }

 private:
  // One decode step on the fixed tensors: what the graph holds. Its token goes back into input_,
  // so the next replay reads it unless the caller gives another input.
  TokenOutput step() {
    const at::Tensor visible = decoder_->visible_through(position_);
    TokenOutput out = masked_step(
        *decoder_, decoder_->embed_at(input_, position_),
        [&](int l, const at::Tensor& h) { return layer(l, h, visible); },
        [&](int exit) { return thresholds_.at(exit - 1); });
    input_.copy_(out.token);
    out.token = input_;
    return out;
  }

  at::cuda::CUDAGraph graph_;
  TokenOutput output_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeMaskedGraph, "masked_graph", Engine::torch, Device::cuda,
                            "masked over fixed-size caches, one CUDA graph replayed for every token");

}  // namespace condbench
