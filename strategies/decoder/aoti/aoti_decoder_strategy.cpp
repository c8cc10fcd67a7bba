#include "decoder/aoti/aoti_decoder_strategy.h"

#include <ATen/ATen.h>

#include <string>

namespace condbench {

namespace {
constexpr size_t kFirstCacheInput = 4;   // after token, at, seen, thresholds
constexpr size_t kFirstCacheOutput = 3;  // after token, exit id, logits
}  // namespace

Unsupported AotiDecoderStrategy::supported(const DecoderConfig& config, Device device, int64_t batch,
                                           const char* module, const char* one_row) {
  if (batch != 1) return "the exported step takes one row (" + std::string(one_row) + "): batch 1 only";
  if (config.num_exits() < 2) return std::string("no exit before the final one: nothing to branch on");
  return aoti::package_unusable(config, device, module);
}

void AotiDecoderStrategy::do_prepare(const DecoderModel& model, int64_t /*batch*/) {
  const DecoderConfig& c = model.config;
  package_ = std::make_unique<aoti::Package>(model, device(), module_);
  prefill_ = std::make_unique<TorchDecoder>(model, torch_device(device()));
  cache_ = prefill_->make_cache(1);
  const at::Tensor positions =
      at::arange(c.context, at::TensorOptions().device(torch_device(device())).dtype(at::kLong));
  at_.clear();
  seen_.clear();
  for (int p = 0; p < c.context; ++p) {
    at_.push_back(positions.eq(p));
    seen_.push_back(positions.le(p));
  }
  thresholds_.prepare(c.num_exits() - 1, device());
  inputs_.assign(kFirstCacheInput + 2 * static_cast<size_t>(c.layers), at::Tensor());
}

void AotiDecoderStrategy::do_start(const at::Tensor& prompt) {
  prefill_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  for (size_t l = 0; l < cache_.k.size(); ++l) {
    inputs_[kFirstCacheInput + 2 * l] = cache_.k[l].select(0, 0);
    inputs_[kFirstCacheInput + 2 * l + 1] = cache_.v[l].select(0, 0);
  }
}

const DecodeOutput& AotiDecoderStrategy::do_step(const at::Tensor& input, const std::vector<float>& thresholds,
                                                 int position) {
  inputs_[0] = input;
  inputs_[1] = at_[static_cast<size_t>(position)];
  inputs_[2] = seen_[static_cast<size_t>(position)];
  inputs_[3] = thresholds_.of(thresholds);
  std::vector<at::Tensor> out = package_->run(inputs_, cuda_stream().value_or(nullptr));
  for (size_t i = kFirstCacheOutput; i < out.size(); ++i)
    inputs_[kFirstCacheInput + i - kFirstCacheOutput] = std::move(out[i]);  // the next step's cache
  output_ = {std::move(out[0]), std::move(out[1]), std::move(out[2])};
  return output_;
}

int AotiDecoderStrategy::last_exit() const { return output_.exit_id.to(at::kCPU).item<int>(); }

DecodeCounters AotiDecoderStrategy::work(int layers_run, int heads) const {
  const DecoderConfig& c = config();
  const int propagated = c.layers - layers_run;
  DecodeCounters k;
  k.layers_run = layers_run;
  k.layers_propagated = propagated;
  k.heads_run = heads;
  k.flops_executed = layers_run * decoder_layer_flops(c, c.context - 1) + propagated * decoder_propagation_flops(c) +
                     heads * decoder_head_flops(c);
  k.bytes_read = layers_run * (decoder_layer_bytes(c) + decoder_cache_read_bytes(c, c.context - 1)) +
                 propagated * decoder_propagation_bytes(c) + decoder_head_bytes(c);
  return k;
}

}  // namespace condbench
