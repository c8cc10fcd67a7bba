// The early-exit MLP (docs/design.md §1): block k = relu(backbone.k(h)), head k = a Linear.
#include <ATen/ATen.h>

#include "families.h"

namespace condbench::families {
namespace {

class MlpLayers final : public TorchLayers {
 public:
  // Specs: backbone.{i}.{weight,bias}, then exit{k}.{weight,bias}, then final.{weight,bias}.
  MlpLayers(const ModelConfig& config, std::vector<at::Tensor> params)
      : TorchLayers(config), params_(std::move(params)) {}

  at::Tensor block(int k, const at::Tensor& h) const override {
    return at::relu(at::linear(h, params_[2 * k], params_[2 * k + 1]));
  }
  at::Tensor head(int k, const at::Tensor& h) const override {
    const size_t at = 2 * (config().blocks + k);
    return at::linear(h, params_[at], params_[at + 1]);
  }

 private:
  std::vector<at::Tensor> params_;
};

}  // namespace

std::shared_ptr<const TorchLayers> mlp_layers(const ModelConfig& config, std::vector<at::Tensor> params) {
  return std::make_shared<MlpLayers>(config, std::move(params));
}

}  // namespace condbench::families
