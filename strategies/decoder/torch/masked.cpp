// masked (decoder, engine torch): every layer and every exit's head for every row, nothing read on
// the host. A row that left keeps its state with `where`; the deeper layers still run on that frozen
// state, so the keys and values they write for it are projected from its state at the exit: state
// propagation falls out of the masking, and the attention and MLP outputs computed for it are
// thrown away.
#include <ATen/ATen.h>

#include "condbench/decoder/torch_decoder.h"
#include "condbench/torch_device.h"

namespace condbench {
namespace {

class DecodeMasked final : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;
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
    at::Tensor h = decoder_->embed(input, position);
    at::Tensor left = at::zeros({batch_}, input.options().dtype(at::kBool));
    at::Tensor exit_id = at::full({batch_}, c.final_exit(), input.options().dtype(at::kInt));
    at::Tensor logits;
    for (int l = 0, exit = 1; l < c.layers; ++l) {
      h = at::where(left.unsqueeze(1), h, decoder_->layer(l, h, cache_, {}, position));
      if (exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;
      const at::Tensor exit_logits = decoder_->logits(h);
      const at::Tensor fire =
          TorchDecoder::exit_test(exit_logits, thresholds[exit - 1]).logical_and(left.logical_not());
      logits = logits.defined() ? at::where(fire.unsqueeze(1), exit_logits, logits) : exit_logits;
      exit_id = at::where(fire, exit, exit_id);
      left = left.logical_or(fire);
      ++exit;
    }
    const at::Tensor final_logits = decoder_->logits(h);
    logits = logits.defined() ? at::where(left.unsqueeze(1), logits, final_logits) : final_logits;
    output_ = {logits.argmax(-1), exit_id, logits};

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

CONDBENCH_REGISTER_DECODER_STRATEGY(DecodeMasked, "masked", Engine::torch, Device::cpu,
                                    "every layer and exit head for every row; rows that left frozen with where");

}  // namespace condbench
