#include "condbench/decoder/torch_decoder.h"

#include <ATen/ATen.h>

#include "condbench/error.h"

namespace condbench {
namespace {

constexpr double kNormEps = 1e-5;

}  // namespace

TorchDecoder::TorchDecoder(const DecoderModel& model, const at::Device& device) : config_(model.config) {
  const std::vector<ParameterSpec> specs = decoder_parameters(config_);
  if (model.params.size() != specs.size())
    fail("decoder: expected " + std::to_string(specs.size()) + " parameters, got " +
         std::to_string(model.params.size()));
  std::vector<at::Tensor> p;
  // Copied (on the CPU too): the decoder outlives the caller's parameters.
  for (size_t i = 0; i < specs.size(); ++i)
    p.push_back(at::from_blob(const_cast<float*>(model.params[i].data()), specs[i].shape, at::kFloat)
                    .to(device, at::kFloat, /*non_blocking=*/false, /*copy=*/true));
  // decoder_parameters() order: embed, pos, 12 per layer, norm, head.
  embed_ = p[0];
  pos_ = p[1];
  for (int l = 0; l < config_.layers; ++l) {
    const auto at = p.begin() + 2 + 12 * l;
    layers_.push_back({at[0], at[1], at[2], at[3], at[4], at[5], at[6], at[7], at[8], at[9], at[10], at[11]});
  }
  norm_w_ = p[p.size() - 3];
  norm_b_ = p[p.size() - 2];
  head_w_ = p.back();
}

KvCache TorchDecoder::make_cache(int64_t batch) const {
  KvCache cache;
  const auto options = embed_.options();
  for (int l = 0; l < config_.layers; ++l) {
    cache.k.push_back(at::zeros({batch, config_.heads, config_.context, config_.head_dim()}, options));
    cache.v.push_back(at::zeros({batch, config_.heads, config_.context, config_.head_dim()}, options));
  }
  return cache;
}

void TorchDecoder::prefill(const at::Tensor& tokens, KvCache& cache) const {
  const int64_t batch = tokens.size(0), n = tokens.size(1), d = config_.d_model, heads = config_.heads;
  if (n == 0) return;
  at::Tensor h = at::embedding(embed_, tokens) + pos_.narrow(0, 0, n);
  auto split = [&](const at::Tensor& t) { return t.reshape({batch, n, heads, d / heads}).transpose(1, 2); };
  for (int l = 0; l < config_.layers; ++l) {
    const Layer& w = layers_[l];
    const at::Tensor a = at::layer_norm(h, {d}, w.norm1_w, w.norm1_b, kNormEps);
    const std::vector<at::Tensor> qkv = at::linear(a, w.qkv_w, w.qkv_b).chunk(3, -1);
    const at::Tensor k = split(qkv[1]), v = split(qkv[2]);
    cache.k[l].narrow(2, 0, n).copy_(k);
    cache.v[l].narrow(2, 0, n).copy_(v);
    const at::Tensor context =
        at::scaled_dot_product_attention(split(qkv[0]), k, v, {}, 0.0, /*is_causal=*/true).transpose(1, 2);
    h = h + at::linear(context.reshape({batch, n, d}), w.out_w, w.out_b);
    const at::Tensor f = at::layer_norm(h, {d}, w.norm2_w, w.norm2_b, kNormEps);
    h = h + at::linear(at::gelu(at::linear(f, w.fc1_w, w.fc1_b)), w.fc2_w, w.fc2_b);
  }
}

at::Tensor TorchDecoder::embed(const at::Tensor& tokens, int64_t position) const {
  return at::embedding(embed_, tokens) + pos_[position];
}

std::pair<at::Tensor, at::Tensor> TorchDecoder::keys_values(const Layer& w, const at::Tensor& a) const {
  const int64_t rows = a.size(0), d = config_.d_model;
  // Rows [d, 3d) of the packed projection: the keys' and the values'.
  const at::Tensor kv = at::linear(a, w.qkv_w.narrow(0, d, 2 * d), w.qkv_b.narrow(0, d, 2 * d));
  const at::Tensor split = kv.reshape({rows, 2, config_.heads, 1, config_.head_dim()});
  return {split.select(1, 0), split.select(1, 1)};
}

void TorchDecoder::write(KvCache& cache, int l, const at::Tensor& rows, int64_t position, const at::Tensor& k,
                         const at::Tensor& v) const {
  if (rows.defined()) {
    // index_put_ on [batch, heads, context, dh] at (rows, :, position): values [rows, heads, dh].
    cache.k[l].index_put_({rows, at::indexing::Slice(), position}, k.squeeze(2));
    cache.v[l].index_put_({rows, at::indexing::Slice(), position}, v.squeeze(2));
  } else {
    cache.k[l].select(2, position).copy_(k.squeeze(2));
    cache.v[l].select(2, position).copy_(v.squeeze(2));
  }
}

// One layer on the rows' states h [rows, d]: `attend(q, k, v)` writes the keys and values
// [rows, heads, 1, head_dim] into the cache and returns the attention's context for the queries.
template <typename Attend>
at::Tensor TorchDecoder::run_layer(int l, const at::Tensor& h, Attend&& attend) const {
  const Layer& w = layers_[l];
  const int64_t n = h.size(0), d = config_.d_model;
  const at::Tensor a = at::layer_norm(h, {d}, w.norm1_w, w.norm1_b, kNormEps);
  const at::Tensor q = at::linear(a, w.qkv_w.narrow(0, 0, d), w.qkv_b.narrow(0, 0, d))
                           .reshape({n, config_.heads, 1, config_.head_dim()});
  const auto [k, v] = keys_values(w, a);
  const at::Tensor context = attend(q, k, v).reshape({n, d});
  const at::Tensor x = h + at::linear(context, w.out_w, w.out_b);
  const at::Tensor f = at::layer_norm(x, {d}, w.norm2_w, w.norm2_b, kNormEps);
  return x + at::linear(at::gelu(at::linear(f, w.fc1_w, w.fc1_b)), w.fc2_w, w.fc2_b);
}

at::Tensor TorchDecoder::layer(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& rows,
                               int64_t position) const {
  return run_layer(l, h, [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    write(cache, l, rows, position, k, v);
    at::Tensor keys = cache.k[l].narrow(2, 0, position + 1), values = cache.v[l].narrow(2, 0, position + 1);
    if (rows.defined()) {
      keys = keys.index_select(0, rows);
      values = values.index_select(0, rows);
    }
    return at::scaled_dot_product_attention(q, keys, values);  // one query per row, every position: no mask
  });
}

at::Tensor TorchDecoder::embed_at(const at::Tensor& tokens, const at::Tensor& position) const {
  return at::embedding(embed_, tokens) + pos_.index_select(0, position);
}

at::Tensor TorchDecoder::visible_through(const at::Tensor& position) const {
  return at::arange(config_.context, position.options()).le(position).reshape({1, 1, 1, config_.context});
}

at::Tensor TorchDecoder::layer_at(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& position,
                                  const at::Tensor& visible) const {
  return run_layer(l, h, [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    cache.k[l].index_copy_(2, position, k);
    cache.v[l].index_copy_(2, position, v);
    return at::scaled_dot_product_attention(q, cache.k[l], cache.v[l], visible);
  });
}

void TorchDecoder::propagate(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& rows,
                             int64_t position) const {
  const Layer& w = layers_[l];
  const at::Tensor a = at::layer_norm(h, {config_.d_model}, w.norm1_w, w.norm1_b, kNormEps);
  const auto [k, v] = keys_values(w, a);
  write(cache, l, rows, position, k, v);
}

void TorchDecoder::propagate_at(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& position) const {
  const Layer& w = layers_[l];
  const auto [k, v] = keys_values(w, at::layer_norm(h, {config_.d_model}, w.norm1_w, w.norm1_b, kNormEps));
  cache.k[l].index_copy_(2, position, k);
  cache.v[l].index_copy_(2, position, v);
}

at::Tensor TorchDecoder::logits(const at::Tensor& h) const {
  return at::linear(at::layer_norm(h, {config_.d_model}, norm_w_, norm_b_, kNormEps), head_w_);
}

at::Tensor TorchDecoder::confidence(const at::Tensor& logits) { return at::softmax(logits, -1).amax(-1); }

}  // namespace condbench
