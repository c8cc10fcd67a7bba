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

  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    const DecoderConfig& c = config();
    output_ = masked_step(
        *decoder_, decoder_->embed(input, position),
        [&](int l, const at::Tensor& h) { return decoder_->layer(l, h, cache_, {}, position); },
        [&](int exit) { return thresholds[exit - 1]; });

    // The same work whatever the decisions.
    count_step_work(record(), c, static_cast<double>(batch_), c.layers, c.num_exits(), position);
    return output_;
  }

 private:
  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  TokenOutput output_;
  int64_t batch_ = 0;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(DecodeMasked, "masked", Engine::torch,
                                         "every layer and exit head for every row; rows that left frozen with where");

}  // namespace condbench
