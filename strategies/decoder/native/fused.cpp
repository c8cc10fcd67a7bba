// fused (decoder, engine native, CPU): the floor. One decode step as one hand-written loop nest over
// a cache made once: every Linear is a PanelLinear (its weights read once per step, front to back,
// however many rows run, each loaded weight serving up to six rows), attention reads each running
// row's cached keys and values once, and the exit test is the vector max-softmax of the other
// families' fused. A row that left keeps its state in place; each deeper layer projects only its
// key and value rows from it (a Linear of the packed projection's rows [d, 3d)). Nothing is
// allocated in a step: the activations, the caches and the outputs are buffers of prepare().
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "native/cpu/panel_linear.h"
#include "native/cpu/vector_confidence.h"

namespace condbench {
namespace {

using Linear = cpu::PanelLinear<simd::kLanes>;
constexpr float kNormEps = 1e-5f;
constexpr float kSqrtHalf = 0.70710678118654752f;  // 1 / sqrt(2)

// y = (x - mean) / sqrt(variance + eps) * w + b over n values (the biased variance, as LayerNorm).
void layer_norm(const float* x, const float* w, const float* b, int n, float* y) {
  float mean = 0.0f;
  for (int i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<float>(n);
  float variance = 0.0f;
  for (int i = 0; i < n; ++i) variance += (x[i] - mean) * (x[i] - mean);
  const float scale = 1.0f / std::sqrt(variance / static_cast<float>(n) + kNormEps);
  for (int i = 0; i < n; ++i) y[i] = (x[i] - mean) * scale * w[i] + b[i];
}

// The exact GELU, x Phi(x), in place.
void gelu(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kSqrtHalf));
}

// The first largest of n values.
int64_t argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) best = x[i] > x[best] ? i : best;
  return best;
}

class DecodeFusedCpu final : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    const DecoderConfig& c = model.config;
    const FlatParameters& p = model.params;
    if (p.size() != decoder_parameters(c).size()) fail("decoder fused: parameters of another model");
    d_ = c.d_model;
    batch_ = static_cast<size_t>(batch);
    embed_ = p[0];
    pos_ = p[1];
    layers_.clear();
    for (int l = 0; l < c.layers; ++l) {
      const auto w = p.begin() + 2 + 12 * l;  // decoder_parameters() order
      layers_.push_back(
          {Linear(NativeLinear::from_torch(w[2].data(), w[3].data(), d_, 3 * d_)),
           Linear(NativeLinear::from_torch(w[2].data() + static_cast<size_t>(d_) * d_, w[3].data() + d_, d_, 2 * d_)),
           Linear(NativeLinear::from_torch(w[4].data(), w[5].data(), d_, d_)),
           Linear(NativeLinear::from_torch(w[8].data(), w[9].data(), d_, c.ffn)),
           Linear(NativeLinear::from_torch(w[10].data(), w[11].data(), c.ffn, d_)), w[0], w[1], w[6], w[7]});
    }
    norm_w_ = p[p.size() - 3];
    norm_b_ = p[p.size() - 2];
    head_ = Linear(NativeLinear::from_torch(p.back().data(), nullptr, d_, c.vocab));

    // Every row of every buffer holds the widest padded output a Linear stores into it, and a
    // little more, so that rows a power of two apart do not share cache sets.
    int widest = std::max(head_.padded_out(), layers_[0].qkv.padded_out());
    widest = std::max({widest, layers_[0].fc1.padded_out(), layers_[0].out.padded_out()});
    pitch_ = static_cast<size_t>(widest) + 16;
    for (std::vector<float>* buffer : {&h_, &a_, &wide_, &context_, &delta_}) buffer->assign(batch_ * pitch_, 0.0f);
    cache_stride_ = static_cast<size_t>(c.context) * c.head_dim();  // one row's one head
    const size_t cache_floats = static_cast<size_t>(c.layers) * batch_ * c.heads * cache_stride_;
    keys_.assign(cache_floats, 0.0f);
    values_.assign(cache_floats, 0.0f);
    scores_.assign(c.context, 0.0f);
    running_.assign(batch_, 0);
    left_.assign(batch_, 0);
    in_.assign(batch_, nullptr);
    out_.assign(batch_, nullptr);
    output_ = {at::empty({batch}, at::kLong), at::empty({batch}, at::kInt), at::empty({batch, c.vocab}, at::kFloat)};
  }

  void do_start(const at::Tensor& prompt) override {
    const at::Tensor tokens = prompt.contiguous();
    const int64_t n = tokens.size(1);
    std::vector<int64_t> column(batch_);
    for (int64_t t = 0; t + 1 < n; ++t) {
      for (size_t r = 0; r < batch_; ++r) column[r] = tokens.data_ptr<int64_t>()[r * n + t];
      decode(column.data(), static_cast<int>(t), nullptr);
    }
  }

  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    decode(input.data_ptr<int64_t>(), position, thresholds.data());
    return output_;
  }

 private:
  struct Layer {
    Linear qkv, kv, out, fc1, fc2;
    std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b;
  };

  float* row(std::vector<float>& buffer, size_t r) { return buffer.data() + r * pitch_; }
  float* cache(std::vector<float>& cache, int l, size_t r, int head) {
    return cache.data() + ((static_cast<size_t>(l) * batch_ + r) * config().heads + head) * cache_stride_;
  }

  // One token per row at `position` through the layers. With thresholds, a decode step: exits,
  // outputs and counters. Without, a prefill position: every layer for every row, no exit.
  void decode(const int64_t* tokens, int position, const float* thresholds) {
    const DecoderConfig& c = config();
    size_t running = batch_, left = 0;
    for (size_t r = 0; r < batch_; ++r) {
      if (tokens[r] < 0 || tokens[r] >= c.vocab)
        fail("token id " + std::to_string(tokens[r]) + " is outside the vocabulary of " + std::to_string(c.vocab));
      const float* e = embed_.data() + static_cast<size_t>(tokens[r]) * d_;
      const float* p = pos_.data() + static_cast<size_t>(position) * d_;
      float* h = row(h_, r);
      for (int i = 0; i < d_; ++i) h[i] = e[i] + p[i];
      running_[r] = r;
    }
    TokenCounters& counters = record();
    bool head_read = false;
    int exit = 1;
    for (int l = 0; l < c.layers; ++l) {
      if (left > 0) propagate(l, left, position, counters);
      if (running == 0) continue;
      run_layer(l, running, position);
      counters.layers_run += static_cast<double>(running);
      counters.flops_executed += static_cast<double>(running) * decoder_layer_flops(c, position);
      counters.bytes_read +=
          decoder_layer_bytes(c) + static_cast<double>(running) * decoder_cache_read_bytes(c, position);
      if (thresholds == nullptr || exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;

      evaluate_head(running, counters, head_read);
      size_t kept = 0;
      for (size_t a = 0; a < running; ++a) {
        const size_t r = running_[a];
        if (math::exit_fires(cpu::max_softmax<simd::kLanes>(row(wide_, r), c.vocab), thresholds[exit - 1])) {
          take_exit(r, exit);
          left_[left++] = r;
        } else {
          running_[kept++] = r;
        }
      }
      running = kept;
      ++exit;
    }
    if (thresholds == nullptr || running == 0) return;
    evaluate_head(running, counters, head_read);
    for (size_t a = 0; a < running; ++a) take_exit(running_[a], c.final_exit());
  }

  // Layer l in full for the running rows: keys and values written at `position`, attention over
  // positions 0..position, the output projection and the MLP added to each row's state.
  void run_layer(int l, size_t running, int position) {
    const Layer& w = layers_[l];
    const int heads = config().heads, dh = config().head_dim();
    for (size_t a = 0; a < running; ++a) {
      const size_t r = running_[a];
      layer_norm(row(h_, r), w.norm1_w.data(), w.norm1_b.data(), d_, row(a_, r));
      in_[a] = row(a_, r);
      out_[a] = row(wide_, r);
    }
    w.qkv.forward(in_.data(), out_.data(), running, false, /*padded=*/true);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    for (size_t a = 0; a < running; ++a) {
      const size_t r = running_[a];
      const float* qkv = row(wide_, r);
      float* context = row(context_, r);
      store_keys_values(l, r, position, qkv + d_);
      for (int head = 0; head < heads; ++head) {
        const float* q = qkv + head * dh;
        const float* k = cache(keys_, l, r, head);
        const float* v = cache(values_, l, r, head);
        float top = -INFINITY;
        for (int j = 0; j <= position; ++j) {
          float s = 0.0f;
          for (int i = 0; i < dh; ++i) s += q[i] * k[static_cast<size_t>(j) * dh + i];
          scores_[j] = s * scale;
          top = std::max(top, scores_[j]);
        }
        float sum = 0.0f;
        for (int j = 0; j <= position; ++j) sum += scores_[j] = std::exp(scores_[j] - top);
        float* out = context + head * dh;
        std::fill(out, out + dh, 0.0f);
        for (int j = 0; j <= position; ++j) {
          const float p = scores_[j] / sum;
          for (int i = 0; i < dh; ++i) out[i] += p * v[static_cast<size_t>(j) * dh + i];
        }
      }
      in_[a] = context;
      out_[a] = row(delta_, r);
    }
    w.out.forward(in_.data(), out_.data(), running, false, true);
    for (size_t a = 0; a < running; ++a) {
      const size_t r = running_[a];
      float* h = row(h_, r);
      const float* delta = row(delta_, r);
      for (int i = 0; i < d_; ++i) h[i] += delta[i];
      layer_norm(h, w.norm2_w.data(), w.norm2_b.data(), d_, row(a_, r));
      in_[a] = row(a_, r);
      out_[a] = row(wide_, r);
    }
    w.fc1.forward(in_.data(), out_.data(), running, false, true);
    for (size_t a = 0; a < running; ++a) {
      gelu(row(wide_, running_[a]), config().ffn);
      in_[a] = row(wide_, running_[a]);
      out_[a] = row(delta_, running_[a]);
    }
    w.fc2.forward(in_.data(), out_.data(), running, false, true);
    for (size_t a = 0; a < running; ++a) {
      float* h = row(h_, running_[a]);
      const float* delta = row(delta_, running_[a]);
      for (int i = 0; i < d_; ++i) h[i] += delta[i];
    }
  }

  // Layer l's keys and values for the rows that left, from their states at the exit.
  void propagate(int l, size_t left, int position, TokenCounters& counters) {
    const Layer& w = layers_[l];
    for (size_t a = 0; a < left; ++a) {
      layer_norm(row(h_, left_[a]), w.norm1_w.data(), w.norm1_b.data(), d_, row(a_, left_[a]));
      in_[a] = row(a_, left_[a]);
      out_[a] = row(wide_, left_[a]);
    }
    w.kv.forward(in_.data(), out_.data(), left, false, true);
    for (size_t a = 0; a < left; ++a) store_keys_values(l, left_[a], position, row(wide_, left_[a]));
    counters.layers_propagated += static_cast<double>(left);
    counters.flops_executed += static_cast<double>(left) * decoder_propagation_flops(config());
    counters.bytes_read += decoder_propagation_bytes(config());
  }

  // kv: row r's keys then values, d_model each, heads side by side.
  void store_keys_values(int l, size_t r, int position, const float* kv) {
    const int dh = config().head_dim();
    for (int head = 0; head < config().heads; ++head) {
      std::memcpy(cache(keys_, l, r, head) + static_cast<size_t>(position) * dh, kv + head * dh, dh * sizeof(float));
      std::memcpy(cache(values_, l, r, head) + static_cast<size_t>(position) * dh, kv + d_ + head * dh,
                  dh * sizeof(float));
    }
  }

  // The shared final norm and LM head for the running rows: logits in wide_.
  void evaluate_head(size_t running, TokenCounters& counters, bool& head_read) {
    for (size_t a = 0; a < running; ++a) {
      layer_norm(row(h_, running_[a]), norm_w_.data(), norm_b_.data(), d_, row(a_, running_[a]));
      in_[a] = row(a_, running_[a]);
      out_[a] = row(wide_, running_[a]);
    }
    head_.forward(in_.data(), out_.data(), running, false, true);
    counters.heads_run += static_cast<double>(running);
    counters.flops_executed += static_cast<double>(running) * decoder_head_flops(config());
    if (!head_read) counters.bytes_read += decoder_head_bytes(config());
    head_read = true;
  }

  void take_exit(size_t r, int exit) {
    const int vocab = config().vocab;
    const float* logits = row(wide_, r);
    output_.token.data_ptr<int64_t>()[r] = argmax(logits, vocab);
    output_.exit_id.data_ptr<int32_t>()[r] = exit;
    std::memcpy(output_.logits.data_ptr<float>() + r * vocab, logits, vocab * sizeof(float));
  }

  int d_ = 0;
  size_t batch_ = 0, pitch_ = 0, cache_stride_ = 0;
  std::vector<float> embed_, pos_, norm_w_, norm_b_;
  std::vector<Layer> layers_;
  Linear head_;
  std::vector<float> h_, a_, wide_, context_, delta_;  // [batch][pitch_]: state, normed, Linear outputs
  std::vector<float> keys_, values_;                   // [layers][batch][heads][context][head_dim]
  std::vector<float> scores_;                          // one head's attention scores
  std::vector<size_t> running_, left_;                 // batch indices
  std::vector<const float*> in_;
  std::vector<float*> out_;
  TokenOutput output_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeFusedCpu, "fused", Engine::native, Device::cpu,
                            "one decode step as one hand-written loop nest over a preallocated cache");

}  // namespace condbench
