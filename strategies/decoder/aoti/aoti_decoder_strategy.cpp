#include "decoder/aoti/aoti_decoder_strategy.h"

#include <ATen/ATen.h>

#include <string>

#include "condbench/agreement.h"
#include "condbench/error.h"
#include "condbench/torch_device.h"

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
  check_package();
}

void AotiDecoderStrategy::check_package() const {
  // A package is found by its model's sizes in the cache; one compiled for another model and put at
  // this one's path (another exit_every, another description) loads and runs all the same. So it
  // is run once, as a model file's packages are, against the model's own step (TorchDecoder): a
  // token at position 1 after a prompt token, leaving at the first exit (threshold 0) and at none
  // (threshold 1), its exit and its logits compared.
  const DecoderConfig& c = config();
  constexpr int kPosition = 1;
  const at::TensorOptions tokens = at::TensorOptions().device(torch_device(device())).dtype(at::kLong);
  const at::Tensor token = at::ones({1}, tokens);
  for (const float threshold : {0.0f, 1.0f}) {
    KvCache cache = prefill_->make_cache(1);
    prefill_->prefill(at::zeros({1, kPosition}, tokens), cache);
    std::vector<at::Tensor> inputs = {token, at_[kPosition], seen_[kPosition],
                                      at::full({c.num_exits() - 1}, threshold, tokens.dtype(at::kFloat))};
    for (size_t l = 0; l < cache.k.size(); ++l) {  // copies: the reference below writes into the cache
      inputs.push_back(cache.k[l].select(0, 0).clone());
      inputs.push_back(cache.v[l].select(0, 0).clone());
    }
    std::vector<at::Tensor> out;
    try {
      out = package_->run(inputs, cuda_stream().value_or(nullptr));
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fail("aoti/" + std::string(module_) + ": the package does not run this model's step (" +
           what.substr(0, what.find('\n')) + "): compile it again (.venv/bin/python -m condbench.aoti --force)");
    }
    at::Tensor h = prefill_->embed(token, kPosition), logits;
    int exit = c.final_exit();
    for (int l = 0; l < c.layers && !logits.defined(); ++l) {
      h = prefill_->layer(l, h, cache, {}, kPosition);
      if (threshold == 0.0f && l + 1 == c.exit_layer(1) && c.num_exits() > 1) {
        exit = 1;
        logits = prefill_->logits(h);
      }
    }
    if (!logits.defined()) logits = prefill_->logits(h);
    const at::Tensor ids = at::full({1}, exit, at::kInt);
    if (out.size() < kFirstCacheOutput ||
        !results_agree(out[1].to(at::kCPU, at::kInt).reshape({1}), out[2].to(at::kCPU, at::kFloat).reshape({1, -1}),
                       ids, logits.to(at::kCPU, at::kFloat).reshape({1, -1})))
      fail("aoti/" + std::string(module_) + ": the package at " + aoti::package_path(c, device(), module_) +
           " computes another model than " + c.describe() + " (a token " +
           (threshold == 0.0f ? "leaving at exit 1" : "at full depth") +
           " differs from the model's own step): compile it again (.venv/bin/python -m condbench.aoti --force)");
  }
}

void AotiDecoderStrategy::do_start(const at::Tensor& prompt) {
  prefill_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  for (size_t l = 0; l < cache_.k.size(); ++l) {
    inputs_[kFirstCacheInput + 2 * l] = cache_.k[l].select(0, 0);
    inputs_[kFirstCacheInput + 2 * l + 1] = cache_.v[l].select(0, 0);
  }
}

const TokenOutput& AotiDecoderStrategy::do_step(const at::Tensor& input, const std::vector<float>& thresholds,
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

TokenCounters AotiDecoderStrategy::work(int layers_run, int heads) const {
  TokenCounters k;
  count_step_work(k, config(), 1, layers_run, heads, config().context - 1);
  return k;
}

}  // namespace condbench
