// The early-exit transformer encoder (docs/design.md §1): layer k computes what
// torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0, activation="gelu",
// batch_first=True, norm_first=True) computes in eval mode, without a mask:
//
//   h = h + out_proj(attention(norm1(h)))      attention: softmax(q k^T / sqrt(d/heads)) v per head
//   h = h + linear2(gelu(linear1(norm2(h))))   exact (erf) GELU; LayerNorm eps 1e-5
//
// and head k reads token 0: logits = proj(norm(h[:, 0, :])).
#include <ATen/ATen.h>

#include "families.h"

namespace condbench::families {
namespace {

constexpr double kNormEps = 1e-5;

// One layer's parameters, in parameter_specs order.
struct Layer {
  at::Tensor in_proj_w, in_proj_b, out_proj_w, out_proj_b, linear1_w, linear1_b, linear2_w, linear2_b;
  at::Tensor norm1_w, norm1_b, norm2_w, norm2_b;
};
struct Head {
  at::Tensor norm_w, norm_b, proj_w, proj_b;
};

class TransformerLayers final : public TorchLayers {
 public:
  TransformerLayers(const ModelConfig& config, const std::vector<at::Tensor>& params) : TorchLayers(config) {
    auto next = params.begin();
    for (int k = 0; k < config.blocks; ++k, next += 12)
      layers_.push_back({next[0], next[1], next[2], next[3], next[4], next[5], next[6], next[7], next[8], next[9],
                         next[10], next[11]});
    for (int k = 0; k <= config.blocks; ++k, next += 4) heads_.push_back({next[0], next[1], next[2], next[3]});
  }

  at::Tensor block(int k, const at::Tensor& h) const override {
    const Layer& l = layers_[k];
    const int64_t d = config().d_model;
    const at::Tensor a = at::layer_norm(h, {d}, l.norm1_w, l.norm1_b, kNormEps);
    const at::Tensor x = h + at::linear(attention(a, l), l.out_proj_w, l.out_proj_b);
    const at::Tensor f = at::layer_norm(x, {d}, l.norm2_w, l.norm2_b, kNormEps);
    return x + at::linear(at::gelu(at::linear(f, l.linear1_w, l.linear1_b)), l.linear2_w, l.linear2_b);
  }

  at::Tensor head(int k, const at::Tensor& h) const override {
    const Head& head = heads_[k];
    const at::Tensor token0 = h.select(1, 0);
    return at::linear(at::layer_norm(token0, {config().d_model}, head.norm_w, head.norm_b, kNormEps), head.proj_w,
                      head.proj_b);
  }

 private:
  // Multi-head self-attention of a [rows, seq, d] before out_proj: the packed q/k/v projection,
  // scaled dot-product attention per head (ATen's fused kernel where it has one, as
  // nn.MultiheadAttention uses), the heads joined again.
  at::Tensor attention(const at::Tensor& a, const Layer& l) const {
    const int64_t rows = a.size(0), seq = a.size(1), d = config().d_model, heads = config().heads;
    const std::vector<at::Tensor> qkv = at::linear(a, l.in_proj_w, l.in_proj_b).chunk(3, -1);
    auto split = [&](const at::Tensor& t) { return t.reshape({rows, seq, heads, d / heads}).transpose(1, 2); };
    const at::Tensor context = at::scaled_dot_product_attention(split(qkv[0]), split(qkv[1]), split(qkv[2]));
    return context.transpose(1, 2).reshape({rows, seq, d});
  }

  std::vector<Layer> layers_;
  std::vector<Head> heads_;
};

}  // namespace

std::shared_ptr<const TorchLayers> transformer_layers(const ModelConfig& config, std::vector<at::Tensor> params) {
  return std::make_shared<TransformerLayers>(config, params);
}

}  // namespace condbench::families
