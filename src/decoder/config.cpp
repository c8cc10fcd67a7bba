#include "condbench/decoder/config.h"

#include <string>

#include "condbench/error.h"
#include "condbench/random.h"

namespace condbench {

namespace {

// Where each of the decoder's sizes lives in a DecoderConfig, by key: the one place a key meets
// a field.
struct Field {
  const char* key;
  int DecoderConfig::*member;
};
constexpr Field kFields[] = {
    {"vocab", &DecoderConfig::vocab},
    {"d_model", &DecoderConfig::d_model},
    {"heads", &DecoderConfig::heads},
    {"layers", &DecoderConfig::layers},
    {"ffn", &DecoderConfig::ffn},
    {"context", &DecoderConfig::context},
    {"exit_every", &DecoderConfig::exit_every},
    {"prompt", &DecoderConfig::prompt},
    {"generate", &DecoderConfig::generate},
};

int DecoderConfig::*field(std::string_view key) {
  for (const Field& f : kFields)
    if (key == f.key) return f.member;
  fail("the decoder has no size '" + std::string(key) + "'");
}

FamilyAxis size_axis(const char* key, const char* help, int max, bool from_weights, bool per_sequence) {
  FamilyAxis a{key, help, DecoderConfig{}.*field(key), max};
  a.from_weights = from_weights;
  a.per_sequence = per_sequence;
  return a;
}

}  // namespace

int DecoderConfig::size(std::string_view key) const { return this->*field(key); }
DecoderConfig& DecoderConfig::set(std::string_view key, int value) {
  this->*field(key) = value;
  return *this;
}

DecoderFamily::DecoderFamily()
    : Family(
          kDecoderFamily,
          "a causal transformer LM whose generated tokens leave early; --full adds GPT-2 small's layer shape",
          // The limits keep a typo from allocating tens of gigabytes (the caches are batch x
          // layers x context x d_model floats), as every family's axes do.
          {
              size_axis("vocab", "vocabulary: token ids 0..vocab-1", 1 << 18, /*from_weights=*/true,
                        /*per_sequence=*/false),
              size_axis("d_model", "width", 1 << 14, /*from_weights=*/true, /*per_sequence=*/false),
              size_axis("heads", "attention heads (divide d_model)", 1024, /*from_weights=*/false,
                        /*per_sequence=*/false),
              size_axis("layers", "transformer layers", 256, /*from_weights=*/true, /*per_sequence=*/false),
              size_axis("ffn", "MLP width", 1 << 16, /*from_weights=*/true, /*per_sequence=*/false),
              size_axis("context", "positions the cache holds", 1 << 14, /*from_weights=*/true, /*per_sequence=*/false),
              size_axis("exit_every", "an exit after every N-th layer", 256, /*from_weights=*/false,
                        /*per_sequence=*/false),
              size_axis("prompt", "prompt tokens per row", 1 << 14, /*from_weights=*/false, /*per_sequence=*/true),
              size_axis("generate", "generated tokens per sequence", 1 << 14, /*from_weights=*/false,
                        /*per_sequence=*/true),
          },
          TimedUnit::token) {}

std::vector<DecoderConfig> DecoderFamily::full_extras() const {
  // GPT-2 small's layers (d_model 768, 12 heads, 12 layers, ffn 3072); the vocabulary stays small, so
  // that the LM head does not hide what the layers cost.
  DecoderConfig gpt2;
  gpt2.d_model = 768;
  gpt2.heads = 12;
  gpt2.layers = 12;
  gpt2.ffn = 3072;
  gpt2.exit_every = 3;
  return {gpt2};
}

std::vector<Family::TaggedModel> DecoderFamily::tagged_models() const {
  std::vector<DecoderConfig> decoders = full_extras();
  decoders.insert(decoders.begin(), DecoderConfig{});
  std::vector<TaggedModel> out;
  for (const DecoderConfig& decoder : decoders) out.push_back(tagged(decoder, decoder.step_tag()));
  return out;
}

std::vector<MemoryTerm> DecoderFamily::default_memory_terms() const { return decoder_memory_terms(); }

std::vector<ParameterSpec> DecoderFamily::parameters(const DecoderConfig& config) const {
  return decoder_parameters(config);
}

std::vector<SizeRelation> DecoderFamily::relations() const {
  return {
      {"exit_every", SizeRelation::Kind::kBelow, "layers", "an exit before the last layer"},
      {"heads", SizeRelation::Kind::kDivides, "d_model", "each head a slice of the width"},
  };
}

std::vector<int64_t> DecoderFamily::runs_batches(bool full) const {
  return full ? std::vector<int64_t>{1, 8, 32} : std::vector<int64_t>{1, 8};
}

const DecoderFamily& decoder_family() {
  static const DecoderFamily family;
  return family;
}

void DecoderConfig::validate() const {
  decoder_family().check_sizes(*this);
  // The prefill holds prompt-1 positions and every step one more: the last step reads position
  // prompt + generate - 2, and its token is never read back in.
  if (prompt + generate - 1 > context)
    fail("prompt + generate - 1 must fit the context, got prompt=" + std::to_string(prompt) +
         " generate=" + std::to_string(generate) + " context=" + std::to_string(context));
  memory_need(0).require("the decoder " + describe());
}

const std::vector<MemoryTerm>& decoder_memory_terms() {
  // The cache: keys and values of every layer at every position, and a second one (the aoti step
  // returns a new cache beside the one it read; the compacting strategies copy theirs). A step's
  // activations (the feed-forward's, the packed query/key/value, the residual), the attention
  // scores over the context, and a step's logits over the vocabulary at each exit tested.
  static const std::vector<MemoryTerm> terms = {
      {"the key/value cache", {"rows", "layers", "context", "d_model"}, 4},
      {"a step's activations", {"rows", "ffn"}, 4},
      {"a step's width activations", {"rows", "d_model"}, 12},
      {"the attention scores", {"rows", "heads", "context"}, 4},
      {"a step's logits", {"rows", "vocab"}, 4},
  };
  return terms;
}

const std::vector<MemoryTerm>& decoder_output_terms() {
  // Every step's logits [rows, generate, vocab], of the first strategy and the one compared with it,
  // each also as the steps' copies it is stacked from; then as JSON (a number node and its text).
  static const std::vector<MemoryTerm> terms = {
      {"the logits kept and printed", {"rows", "generate", "vocab"}, 12},
  };
  return terms;
}

MemoryNeed DecoderConfig::memory_need(int64_t rows) const {
  return MemoryNeed::of_model(parameter_floats(decoder_parameters(*this)), rows, decoder_memory_terms(),
                              memory_sizes(rows));
}

SizeOf DecoderConfig::memory_sizes(int64_t rows) const {
  return [config = *this, rows](const std::string& name) -> double {
    if (name == "rows") return static_cast<double>(rows);
    return config.size(name);
  };
}

std::string DecoderConfig::describe() const { return decoder_family().sizes_text(*this); }
std::string DecoderConfig::tag() const { return decoder_family().tag_stem(*this); }
std::string DecoderConfig::step_tag() const { return decoder_family().tag_stem(*this, /*with_sequence=*/false); }

// What every family's names end with, the exits before the final one, that a scenario exit:K is
// checked against (K <= blocks + 1).
std::vector<std::pair<std::string, std::string>> DecoderConfig::name_axes() const {
  return decoder_family().name_axes(*this, num_exits() - 1);
}

std::vector<ParameterSpec> decoder_parameters(const DecoderConfig& c) {
  const int d = c.d_model;
  std::vector<ParameterSpec> specs;
  specs.push_back({"embed.weight", {c.vocab, d}, 0.0f, 1.0f});
  specs.push_back({"pos.weight", {c.context, d}, 0.0f, 1.0f});
  for (int i = 0; i < c.layers; ++i) {
    const std::string layer = "layers." + std::to_string(i) + ".";
    add_norm(specs, layer + "norm1", d);
    add_linear(specs, layer + "attn.qkv", d, 3 * d);
    add_linear(specs, layer + "attn.out", d, d);
    add_norm(specs, layer + "norm2", d);
    add_linear(specs, layer + "fc1", d, c.ffn);
    add_linear(specs, layer + "fc2", c.ffn, d);
  }
  add_norm(specs, "norm", d);
  specs.push_back({"head.weight", {c.vocab, d}, 0.0f, linear_bound(d)});
  return specs;
}

FlatParameters seeded_decoder_parameters(const DecoderConfig& config, uint64_t seed) {
  return seeded_parameters(decoder_parameters(config), seed);
}

std::vector<int64_t> seeded_prompts(const DecoderConfig& config, int64_t rows, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> tokens(static_cast<size_t>(rows) * config.prompt);
  for (int64_t& t : tokens) t = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(config.vocab));
  return tokens;
}

// q/k/v 3d^2, out d^2, fc1 and fc2 2 d ffn multiply-adds; the scores and the weighted sum of the
// values over position + 1 keys, d each (every head together).
double decoder_layer_flops(const DecoderConfig& c, int position) {
  const double d = c.d_model, f = c.ffn;
  return 2.0 * (4.0 * d * d + 2.0 * d * f) + 4.0 * (position + 1.0) * d;
}
double decoder_propagation_flops(const DecoderConfig& c) { return 2.0 * 2.0 * c.d_model * c.d_model; }
double decoder_head_flops(const DecoderConfig& c) { return 2.0 * c.d_model * c.vocab; }

// qkv 3d^2 + 3d, out d^2 + d, fc1 d ffn + ffn, fc2 ffn d + d, two norms 4d.
double decoder_layer_bytes(const DecoderConfig& c) {
  const double d = c.d_model, f = c.ffn;
  return 4.0 * (4.0 * d * d + 2.0 * d * f + 8.0 * d + f);
}
double decoder_propagation_bytes(const DecoderConfig& c) {
  const double d = c.d_model;
  return 4.0 * (2.0 * d * d + 2.0 * d + 2.0 * d);  // the key and value rows, their biases, norm1
}
double decoder_head_bytes(const DecoderConfig& c) { return 4.0 * (1.0 * c.vocab * c.d_model + 2.0 * c.d_model); }
double decoder_cache_read_bytes(const DecoderConfig& c, int position) {
  return 4.0 * 2.0 * (position + 1.0) * c.d_model;
}

}  // namespace condbench
