// graph_cond (decoder, engine torch, CUDA): one decode step captured once into a CUDA graph with
// conditional IF nodes at each exit (conditional_step.h: while some row runs, the next exit's
// layers for the batch; once none does, only the deeper layers' keys and values), replayed for
// every token over fixed-size caches and a device-side position, as masked_graph is. The exit
// decisions never reach the host: a step whose rows all leave early runs only their layers and the
// projections. The IF nodes are ConditionalGraph's (LibTorch's own conditional capture, or the
// CUDA runtime's where LibTorch has none). What ran is counted on the device, inside the bodies,
// and read back only by the untimed passes.
#include <c10/cuda/CUDAGuard.h>

#include <memory>

#include "condbench/torch_cuda.h"
#include "decoder/torch/conditional_step.h"
#include "decoder/torch/cuda/fixed_step_strategy.h"
#include "torch/cuda/conditional_graph.h"

namespace condbench {
namespace {

class DecodeGraphCond final : public FixedStepStrategy {
 public:
  using FixedStepStrategy::FixedStepStrategy;
  static constexpr bool kSkipsOnDeviceWhenAllLeft = true;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    const DecoderConfig& c = model.config;
    allocate_fixed(model, batch);
    state_.allocate(c, batch, at::Device(at::kCUDA, 0));
    const at::cuda::CUDAStream side = capture_stream();
    graph_ = std::make_unique<ConditionalGraph>(c.num_exits() - 1);
    // Every body on every stream one is captured on, eagerly, before the capture (cuBLAS's handles
    // and workspaces must exist before it).
    for (const at::cuda::CUDAStream& stream : graph_->streams(side)) {
      const c10::cuda::CUDAStreamGuard on(stream);
      step([](const at::Tensor& /*predicate*/, int /*depth*/, const auto& body) { body(); });
      stream.synchronize();
    }
    graph_->capture(side, [&] {
      step([&](const at::Tensor& predicate, int depth, const auto& body) {
        const std::unique_ptr<ConditionalGraph::Body> node = graph_->open_if(predicate, depth);
        body();
        node->end();
      });
    });
    side.synchronize();
    output_ = {input_, state_.exit_id, state_.logits};
  }

  const DecodeOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    set_step(input, thresholds, position);
    graph_->launch();
    record().launches += 1;  // the launch; the copies before it are ATen calls, counted as such
    return output_;
  }

  // Layers and heads as the bodies counted them, for every row of the batch; the layers not run
  // only projected keys and values. Attention reads the whole cache, masked, as in masked_graph.
  void do_read_device_counters(DecodeCounters& counted) const override {
    const DecoderConfig& c = config();
    const at::Tensor ran = state_.ran.to(at::kCPU);
    const double b = static_cast<double>(batch_), layers = ran[0].item<int>(), heads = ran[1].item<int>();
    counted.layers_run = b * layers;
    counted.layers_propagated = b * (c.layers - layers);
    counted.heads_run = b * heads;
    counted.flops_executed = b * (layers * decoder_layer_flops(c, c.context - 1) +
                                  (c.layers - layers) * decoder_propagation_flops(c) + heads * decoder_head_flops(c));
    counted.bytes_read = layers * (decoder_layer_bytes(c) + b * decoder_cache_read_bytes(c, c.context - 1)) +
                         (c.layers - layers) * decoder_propagation_bytes(c) + decoder_head_bytes(c);
  }

 private:
  // One decode step on the fixed tensors, its branches through `when`; its tokens go into input_,
  // which the next replay reads unless the caller gives another input.
  template <typename When>
  void step(When&& when) {
    const at::Tensor visible = decoder_->visible_through(position_);
    conditional_step(
        *decoder_, decoder_->embed_at(input_, position_), state_,
        [&](int l, const at::Tensor& h) { return layer(l, h, visible); },
        [&](int l, const at::Tensor& h) { decoder_->propagate_at(l, h, cache_, position_); },
        [&](int exit) { return thresholds_.at(exit - 1); }, when);
    input_.copy_(state_.logits.argmax(-1));
  }

  ConditionalStepState state_;
  std::unique_ptr<ConditionalGraph> graph_;
  DecodeOutput output_;
};

}  // namespace

CONDBENCH_REGISTER_DECODER_STRATEGY(DecodeGraphCond, "graph_cond", Engine::torch, Device::cuda,
                                    "one CUDA graph per step, IF nodes at each exit while any row runs");

}  // namespace condbench
