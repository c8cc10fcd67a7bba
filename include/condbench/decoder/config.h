#pragma once
// The early-exit decoder (docs/design.md §8): a causal pre-norm transformer language model that
// generates tokens greedily, one step per token, and lets each token leave after an exit layer.
// Torch-free: the native engine reads it without LibTorch.
//
//   h = embed[token] + pos[position]
//   layer l:  h = h + out(attention(norm1(h)))       causal multi-head self-attention over the cache
//             h = h + fc2(gelu(fc1(norm2(h))))       exact (erf) GELU; LayerNorm eps 1e-5
//   exit e (after layer exit_layer(e), and the final one after the last layer):
//             logits = head(norm(h))                 one final norm and one LM head, shared by every exit
//
// A token leaves at the first exit whose largest softmax probability is strictly above that
// exit's threshold (math::exit_fires, the rule of every family); its next token is that exit's
// argmax. The layers it skipped still get its keys and values, projected from its hidden state at
// the exit (CALM's state propagation); nothing else of theirs is computed for it.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "condbench/family.h"  // Family, FamilyAxis
#include "condbench/memory_budget.h"
#include "condbench/parameters.h"
#include "condbench/result_format.h"  // kDecoderFamily
#include "condbench/size_relation.h"

namespace condbench {

struct DecoderConfig {
  int vocab = 512;     // token ids 0..vocab-1
  int d_model = 256;   // width
  int heads = 4;       // attention heads; must divide d_model
  int layers = 8;      // transformer layers
  int ffn = 1024;      // MLP width
  int context = 64;    // positions the cache holds (learned positions: pos.weight has this many rows)
  int exit_every = 2;  // an exit after every exit_every-th layer before the last
  int prompt = 16;     // prompt tokens per row
  int generate = 32;   // generated tokens per sequence: one decode step each

  // Exits 1..num_exits(); the last is the final one, after every layer. Exit e < num_exits() reads
  // the state after layer exit_layer(e) (1-based: exit_layer(1) == exit_every).
  int num_exits() const { return (layers - 1) / exit_every + 1; }
  int final_exit() const { return num_exits(); }
  int exit_layer(int exit) const { return exit == final_exit() ? layers : exit * exit_every; }
  int head_dim() const { return d_model / heads; }
  // The size of decoder_family()'s axis `key`, as ModelConfig::size is a family's; throws condbench::Error
  // naming an unknown key.
  int size(std::string_view key) const;
  DecoderConfig& set(std::string_view key, int value);
  // The position of decode step t (0-based): the prompt's first prompt-1 tokens are the prefill,
  // step 0 reads the prompt's last token, step t its own output of step t-1.
  int step_position(int step) const { return prompt - 1 + step; }

  // Throws condbench::Error naming the size that is out of range or inconsistent, or when the
  // weights alone are over the memory budget (memory_budget.h).
  void validate() const;
  // What the decoder holds for `rows` rows decoding at once (0: its weights alone): its weights, then
  // decoder_memory_terms. Check it with MemoryNeed::require before anything is allocated.
  MemoryNeed memory_need(int64_t rows) const;
  // A MemoryTerm's factors: "rows" is `rows`, the others the sizes by key.
  SizeOf memory_sizes(int64_t rows) const;
  // "vocab=512 d_model=256 heads=4 layers=8 ffn=1024 context=64 exit_every=2 prompt=16 generate=32"
  std::string describe() const;
  // "decoder-vocab512-d_model256-...-generate32": the name of its exported workload's folder (as
  // ModelConfig::tag is the other families').
  std::string tag() const;
  // The same without the sizes per sequence: the name of what one decode step is, whatever the
  // prompt and the tokens generated (its AOTInductor packages).
  std::string step_tag() const;
  // The benchmark-name axes, in order: model:decoder, every size, then blocks: the exits before the
  // final one (the other families' depth, as far as scenarios and reports are concerned).
  std::vector<std::pair<std::string, std::string>> name_axes() const;

  friend bool operator==(const DecoderConfig&, const DecoderConfig&) = default;
};

// The decoder as a family (family.h): its sizes as every family's are described (FamilyAxis: the
// key, --help's words, the default, the most accepted, whether a state_dict's shapes say it), in
// the order of its benchmark-name axes, `per_sequence` marking what a sequence is (prompt,
// generate), not its step; how they must relate (DecoderConfig::validate, rules.json's
// config_relations); its batches. It is timed per generated token.
class DecoderFamily final : public Family, public StateDictContractOf<DecoderConfig> {
 public:
  DecoderFamily();
  // Its state_dict contract (docs/models.md, "The decoder"): decoder_parameters, the block prefix
  // "layers." (the transformer's too: "embed.weight" tells the two apart), and its sizes from the
  // shapes (read_sizes: defined beside the reader, src/decoder_files.cpp, as it needs LibTorch).
  const StateDictKeys* state_dict_keys() const override { return this; }
  const StateDictContractOf<DecoderConfig>& state_dict() const { return *this; }
  std::vector<ParameterSpec> parameters(const DecoderConfig& config) const override;
  std::string block_prefix() const override { return "layers."; }
  std::string own_key() const override { return "embed.weight"; }
  void read_sizes(const StateDictShapes& state_dict, DecoderConfig& config) const override;

  std::vector<SizeRelation> relations() const override;
  std::vector<int64_t> runs_batches(bool full) const override;
  // The decoders --full adds beyond the default (GPT-2 small's layer shape).
  std::vector<DecoderConfig> full_extras() const;
  std::vector<TaggedModel> tagged_models() const override;  // each one's step sizes and step_tag
  std::vector<MemoryTerm> default_memory_terms() const override;
};
const DecoderFamily& decoder_family();

// What `rows` rows decoding at once hold beside the weights, as named products of "rows" and the
// decoder's sizes: the key/value cache above all (memory_budget.h; rules.json gives them to Python).
const std::vector<MemoryTerm>& decoder_memory_terms();
// What condbench-infer keeps beside that: every step's logits of two strategies and their JSON.
const std::vector<MemoryTerm>& decoder_output_terms();

// The state_dict contract (docs/models.md, "The decoder"): embed.weight [vocab, d], pos.weight
// [context, d]; for each layer layers.{i}.{norm1, attn.qkv, attn.out, norm2, fc1, fc2}.{weight,
// bias}, the query, key and value projections packed as rows [0, d), [d, 2d), [2d, 3d) of qkv;
// norm.{weight, bias}; head.weight [vocab, d], without a bias.
std::vector<ParameterSpec> decoder_parameters(const DecoderConfig& config);
// Every parameter drawn from SplitMix64(seed) in that order (the embeddings in U(-1, 1)).
FlatParameters seeded_decoder_parameters(const DecoderConfig& config, uint64_t seed);
// Seeded prompts, token ids uniform in [0, vocab): [rows][prompt], row-major.
std::vector<int64_t> seeded_prompts(const DecoderConfig& config, int64_t rows, uint64_t seed);

// What one generated token costs per row (docs/measured.md, "The decoder"): a layer run in full at
// `position` (the q/k/v, output and MLP Linears, and attention over positions 0..position), the key
// and value projections of a layer a token skipped, and one evaluation of the LM head.
double decoder_layer_flops(const DecoderConfig& config, int position);
double decoder_propagation_flops(const DecoderConfig& config);
double decoder_head_flops(const DecoderConfig& config);
// Bytes: a layer's weights and biases; the key and value rows of its projection; the final norm
// and the LM head; and one row's keys and values of one layer at positions 0..position.
double decoder_layer_bytes(const DecoderConfig& config);
double decoder_propagation_bytes(const DecoderConfig& config);
double decoder_head_bytes(const DecoderConfig& config);
double decoder_cache_read_bytes(const DecoderConfig& config, int position);

}  // namespace condbench
