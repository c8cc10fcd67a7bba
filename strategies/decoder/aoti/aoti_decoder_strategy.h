#pragma once
// What the aoti engine's decoder strategies share: one decode step as PyTorch deploys it to C++ —
// torch.export of the peer's fixed-size step (DecodeStep in python/condbench/deployed.py: the cache
// an explicit input and output, the position a one-hot row), AOTInductor, then
// torch::inductor::AOTIModelPackageLoader (strategies/aoti/aoti_package.h), the model's weights
// loaded over the package's placeholders. One row: the step's torch.cond branches on one boolean,
// and masking is exported at the same batch. The prefill runs through LibTorch (TorchDecoder) into
// the same cache; a step's outputs become the next step's cache, so each step allocates it anew,
// as the deployed module does.
#include <memory>
#include <vector>

#include "aoti/aoti_package.h"
#include "decoder/torch/torch_decoder_strategy.h"

namespace condbench {

class AotiDecoderStrategy : public TorchDecoderStrategy {
 public:
  AotiDecoderStrategy(Device device, const char* module) : TorchDecoderStrategy(device), module_(module) {}

 protected:
  // Batch 1 and a usable package of `module`, or why not (`one_row`: why the step takes one row).
  static Unsupported supported(const DecoderConfig& config, Device device, int64_t batch, const char* module,
                               const char* one_row);

  void do_prepare(const DecoderModel& model, int64_t batch) override;
  void do_start(const at::Tensor& prompt) override;
  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override;

  // The exit the last step took (a copy to the host: the untimed passes only).
  int last_exit() const;
  // What a step did that ran its first `layers_run` layers in full, projected the others' keys and
  // values, and evaluated `heads` heads; attention reads the whole cache, masked.
  TokenCounters work(int layers_run, int heads) const;

 private:
  // Throws condbench::Error when the loaded package does not compute this model's step.
  void check_package() const;

  const char* module_;
  std::unique_ptr<aoti::Package> package_;
  std::unique_ptr<TorchDecoder> prefill_;
  KvCache cache_;                      // what the prefill writes: [1, heads, context, head_dim] per layer
  std::vector<at::Tensor> at_, seen_;  // per position: the one-hot row, and positions 0..it
  aoti::ThresholdTensor thresholds_;
  std::vector<at::Tensor> inputs_;  // token, at, seen, thresholds, keys_0, values_0, ...
  TokenOutput output_;
};

}  // namespace condbench
