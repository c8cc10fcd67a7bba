// The early-exit transformer encoder (docs/design.md §1): layer k computes what
// torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0, activation="gelu",
// batch_first=True, norm_first=True) computes in eval mode, without a mask:
//
//   h = h + out_proj(attention(norm1(h)))      attention: softmax(q k^T / sqrt(d/heads)) v per head
//   h = h + linear2(gelu(linear1(norm2(h))))   exact (erf) GELU; LayerNorm eps 1e-5
//
// and head k reads token 0: logits = proj(norm(h[:, 0, :])).
#include <ATen/ATen.h>

#include "condbench/error.h"

#include "condbench/family.h"
#include "condbench/model.h"

namespace condbench {
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
    const int64_t d = config().size("d_model");
    const at::Tensor a = at::layer_norm(h, {d}, l.norm1_w, l.norm1_b, kNormEps);
    const at::Tensor x = h + at::linear(attention(a, l), l.out_proj_w, l.out_proj_b);
    const at::Tensor f = at::layer_norm(x, {d}, l.norm2_w, l.norm2_b, kNormEps);
    return x + at::linear(at::gelu(at::linear(f, l.linear1_w, l.linear1_b)), l.linear2_w, l.linear2_b);
  }

  at::Tensor head(int k, const at::Tensor& h) const override {
    const Head& head = heads_[k];
    const at::Tensor token0 = h.select(1, 0);
    return at::linear(at::layer_norm(token0, {config().size("d_model")}, head.norm_w, head.norm_b, kNormEps),
                      head.proj_w, head.proj_b);
  }

 private:
  // Multi-head self-attention of a [rows, seq, d] before out_proj: the packed q/k/v projection,
  // scaled dot-product attention per head (ATen's fused kernel where it has one, as
  // nn.MultiheadAttention uses), the heads joined again.
  at::Tensor attention(const at::Tensor& a, const Layer& l) const {
    const int64_t rows = a.size(0), seq = a.size(1), d = config().size("d_model"), heads = config().size("heads");
    const std::vector<at::Tensor> qkv = at::linear(a, l.in_proj_w, l.in_proj_b).chunk(3, -1);
    auto split = [&](const at::Tensor& t) { return t.reshape({rows, seq, heads, d / heads}).transpose(1, 2); };
    const at::Tensor context = at::scaled_dot_product_attention(split(qkv[0]), split(qkv[1]), split(qkv[2]));
    return context.transpose(1, 2).reshape({rows, seq, d});
  }

  std::vector<Layer> layers_;
  std::vector<Head> heads_;
};

class Transformer final : public ModelFamily, public StateDictContract {
 public:
  Transformer()
      : ModelFamily(
            "transformer", "an encoder of torch.nn.TransformerEncoderLayer layers, an exit head on token 0 after each",
            {{.key = "d_model", .help = "width", .fallback = 256, .max = 1 << 14},
             {.key = "heads",
              .help = "attention heads; a state_dict cannot say",
              .fallback = 4,
              .max = 1024,
              .from_weights = false},
             {.key = "ffn", .help = "feed-forward width", .fallback = 1024, .scales_with = "d_model", .scale = 4},
             {.key = "seq",
              .help = "tokens per row",
              .fallback = 32,
              .max = 1 << 14,
              .input_dim = 0,
              .from_weights = false}}) {}

  const StateDictContract* state_dict() const override { return this; }
  int default_blocks() const override { return 6; }
  std::vector<int> runs_blocks(bool /*full*/) const override { return {6}; }
  std::vector<int64_t> runs_batches(bool /*full*/) const override { return {1, 8}; }
  // BERT-base's encoder: what an early-exit model people ship (DeeBERT) exits between.
  std::vector<ModelConfig> full_extras() const override {
    ModelConfig bert = config();
    bert.set("d_model", 768).set("heads", 12).set("ffn", 3072).set("seq", 128).blocks = 12;
    return {bert};
  }

  std::vector<int64_t> row_shape(const ModelConfig& c) const override { return {c.size("seq"), c.size("d_model")}; }
  int width(const ModelConfig& c) const override { return c.size("d_model"); }
  // The input rows (the pool's batch and its copy on the device); a layer's activations of width
  // d_model (the residual, two norms, the packed query/key/value, the attention's output and the
  // masked strategies' kept state), its feed-forward's (linear1 and its GELU), and the attention
  // scores with their softmax; every exit's logits.
  std::vector<MemoryTerm> memory_terms(const ModelConfig& /*config*/) const override {
    return {{"the input rows", {"rows", "seq", "d_model"}, 2},
            {"a layer's activations", {"rows", "seq", "d_model"}, 10},
            {"the feed-forward activations", {"rows", "seq", "ffn"}, 2},
            {"the attention scores", {"rows", "heads", "seq", "seq"}, 2},
            {"every exit's logits", {"rows", "num_classes", "blocks"}, 3}};
  }
  std::vector<SizeRelation> relations() const override {
    return {{"heads", SizeRelation::Kind::kDivides, "d_model", "each head a slice of the width"}};
  }

  // torch.nn.TransformerEncoderLayer's state_dict order; in_proj packs the query, key and value
  // projections as rows [0, d), [d, 2d), [2d, 3d) of one [3d, d] weight.
  std::vector<ParameterSpec> parameters(const ModelConfig& c) const override {
    const int d = c.size("d_model"), ffn = c.size("ffn");
    std::vector<ParameterSpec> specs;
    for (int i = 0; i < c.blocks; ++i) {
      const std::string layer = "layers." + std::to_string(i) + ".";
      specs.push_back({layer + "self_attn.in_proj_weight", {3 * d, d}, 0.0f, linear_bound(d)});
      specs.push_back({layer + "self_attn.in_proj_bias", {3 * d}, 0.0f, linear_bound(d)});
      add_linear(specs, layer + "self_attn.out_proj", d, d);
      add_linear(specs, layer + "linear1", d, ffn);
      add_linear(specs, layer + "linear2", ffn, d);
      add_norm(specs, layer + "norm1", d);
      add_norm(specs, layer + "norm2", d);
    }
    auto add_head = [&](const std::string& name) {
      add_norm(specs, name + ".norm", d);
      add_linear(specs, name + ".proj", d, c.num_classes);
    };
    for (int k = 1; k <= c.blocks; ++k) add_head("exit" + std::to_string(k));
    add_head("final");
    return specs;
  }

  std::string block_prefix() const override { return "layers."; }
  void read_sizes(const StateDictShapes& state_dict, ModelConfig& c) const override {
    const std::vector<int64_t>& linear1 = state_dict.require("layers.0.linear1.weight", 2);
    c.set("ffn", static_cast<int>(linear1[0])).set("d_model", static_cast<int>(linear1[1]));
    state_dict.require("layers.0.self_attn.in_proj_weight", 2);
    c.num_classes = static_cast<int>(state_dict.require("final.proj.weight", 2)[0]);
    c.blocks = state_dict.count("layers.", ".self_attn.in_proj_weight");
  }

  // Per row of seq tokens: the q/k/v and output projections (4 d^2 per token), the two FFN
  // Linears (2 d ffn per token), attention scores and their weighted sum (2 seq d per token,
  // every head together).
  double block_flops(const ModelConfig& c, int /*block*/) const override {
    const double s = c.size("seq"), d = c.size("d_model"), f = c.size("ffn");
    return 2.0 * s * (4.0 * d * d + 2.0 * d * f) + 4.0 * s * s * d;
  }
  // A head reads token 0 only; its LayerNorm is not counted (like a bias or a ReLU).
  double head_flops(const ModelConfig& c, int /*head*/) const override {
    return 2.0 * c.size("d_model") * c.num_classes;
  }
  // in_proj 3d^2 + 3d, out_proj d^2 + d, linear1 ffn d + ffn, linear2 d ffn + d, two norms 4d
  double block_bytes(const ModelConfig& c, int /*block*/) const override {
    const double d = c.size("d_model"), f = c.size("ffn");
    return 4.0 * (4.0 * d * d + 2.0 * d * f + 9.0 * d + f);
  }
  // The Linear's weights and bias (2 FLOPs, 4 bytes per weight), and the norm's two vectors.
  double head_bytes(const ModelConfig& c, int head) const override {
    return 2.0 * head_flops(c, head) + 4.0 * c.num_classes + 8.0 * c.size("d_model");
  }

  std::shared_ptr<const TorchLayers> layers(const ModelConfig& c, std::vector<at::Tensor> params,
                                            const at::Device& /*device*/) const override {
    return std::make_shared<TransformerLayers>(c, params);
  }
};

CONDBENCH_REGISTER_FAMILY(Transformer);

}  // namespace

}  // namespace condbench
