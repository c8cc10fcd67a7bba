#pragma once
// The decoder's layers as LibTorch calls on one device, over a key/value cache: what the torch
// engine's decoder strategies share (strategies/decoder/torch/), as TorchLayers is for the other
// families. The arithmetic is docs/design.md §8's; the rows a call works on are given as indices
// into the batch, or all of them.
#include <ATen/core/Tensor.h>

#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/torch_exit_rule.h"

namespace condbench {

// Keys and values of every row at every position: per layer, [batch, heads, context, head_dim].
struct KvCache {
  std::vector<at::Tensor> k, v;
};

class TorchDecoder {
 public:
  TorchDecoder(const DecoderModel& model, const at::Device& device);
  const DecoderConfig& config() const { return config_; }

  // Caches for `batch` rows, zero.
  KvCache make_cache(int64_t batch) const;
  // Runs tokens [batch, n] at positions 0..n-1 through every layer, filling those positions of
  // the cache (causal attention within the n tokens).
  void prefill(const at::Tensor& tokens, KvCache& cache) const;

  // The state entering layer 0 for tokens [rows] at `position`: [rows, d_model].
  at::Tensor embed(const at::Tensor& tokens, int64_t position) const;
  // Layer l for rows `rows` (undefined: every row of the cache, in order) with state h [rows, d]
  // at `position`: writes their keys and values there, attends over positions 0..position, and
  // returns the state after the layer.
  at::Tensor layer(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& rows, int64_t position) const;
  // Only the keys and values layer l would write for state h (a row that left: its state at the exit).
  void propagate(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& rows, int64_t position) const;
  // The same step over fixed-size tensors, for a step captured once into a CUDA graph and replayed
  // at every position: the position is a device tensor (int64 [1]), and attention reads the
  // whole cache through `visible`, bool [1, 1, 1, context], true at positions 0..position.
  at::Tensor embed_at(const at::Tensor& tokens, const at::Tensor& position) const;
  at::Tensor layer_at(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& position,
                      const at::Tensor& visible) const;
  // Only the keys and values layer_at would write for every row's state h: the fixed-size propagate.
  void propagate_at(int l, const at::Tensor& h, KvCache& cache, const at::Tensor& position) const;
  // `visible` for a position tensor.
  at::Tensor visible_through(const at::Tensor& position) const;

  // Any exit's logits for the state h [rows, d]: the shared final norm, then the LM head.
  at::Tensor logits(const at::Tensor& h) const;
  // The exit test on an exit's logits [rows, vocab]: bool [rows], true where the largest softmax
  // probability is strictly above `threshold` (math::exit_fires, as a tensor operation).
  // threshold: a float, or a 0-d tensor on the logits' device (what a captured graph reads).
  template <typename Threshold>
  static at::Tensor exit_test(const at::Tensor& logits, const Threshold& threshold) {
    return math::exit_fires(confidence(logits), threshold);
  }
  // The largest softmax probability of each row of logits [rows, vocab].
  static at::Tensor confidence(const at::Tensor& logits);

 private:
  struct Layer {
    at::Tensor norm1_w, norm1_b, qkv_w, qkv_b, out_w, out_b, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w, fc2_b;
  };
  // The keys and values of norm1(h) for layer l: [rows, heads, 1, head_dim] each.
  std::pair<at::Tensor, at::Tensor> keys_values(const Layer& l, const at::Tensor& a) const;
  template <typename Attend>
  at::Tensor run_layer(int l, const at::Tensor& h, Attend&& attend) const;
  void write(KvCache& cache, int l, const at::Tensor& rows, int64_t position, const at::Tensor& k,
             const at::Tensor& v) const;

  DecoderConfig config_;
  at::Tensor embed_, pos_, norm_w_, norm_b_, head_w_;
  std::vector<Layer> layers_;
};

}  // namespace condbench
