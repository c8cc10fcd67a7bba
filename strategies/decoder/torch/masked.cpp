// masked (decoder, engine torch): every layer and every exit's head for every row, nothing read on
// the host. A row that left keeps its state with `where`; the deeper layers still run on that frozen
// state, so the keys and values they write for it are projected from its state at the exit: state
// propagation falls out of the masking, and the attention and MLP outputs computed for it are
// thrown away.
#include <ATen/ATen.h>

#include "decoder/torch/masked_step.h"
#include "decoder/torch/torch_decoder_strategy.h"

namespace condbench {
namespace {

class DecodeMasked final : public TorchDecoderStrategy {
 public:
  using TorchDecoderStrategy::TorchDecoderStrategy;
  static constexpr bool kComputesEveryRow = true;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    decoder_ = std::make_unique<TorchDecoder>(model, torch_device(device()));
    cache_ = decoder_->make_cache(batch);
    batch_ = batch;
  }

  void do_start(const at::Tensor& prompt) override {
    decoder_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  }

  const DecodeOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    const DecoderConfig& c = config();
    output_ = masked_step(
        *decoder_, decoder_->embed(input, position),
        [&](int l, const at::Tensor& h) { return decoder_->layer(l, h, cache_, {}, position); },
        [&](int exit) { return thresholds[exit - 1]; });

    // The same work whatever the decisions.
    const double b = static_cast<double>(batch_);
    DecodeCounters& counters = record();
    counters.layers_run = b * c.layers;
    counters.heads_run = b * c.num_exits();
    counters.flops_executed = b * (c.layers * decoder_layer_flops(c, position) + c.num_exits() * decoder_head_flops(c));
    counters.bytes_read =
        c.layers * (decoder_layer_bytes(c) + b * decoder_cache_read_bytes(c, position)) + decoder_head_bytes(c);
    return output_;
  }

 private:
  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  DecodeOutput output_;
  int64_t batch_ = 0;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeMasked, "masked", Engine::torch, Device::cpu,
                            "every layer and exit head for every row; rows that left frozen with where");
#if CONDBENCH_CUDA
CONDBENCH_REGISTER_STRATEGY(DecodeMasked, "masked", Engine::torch, Device::cuda,
                            "every layer and exit head for every row; rows that left frozen with where");
#endif

}  // namespace condbench
