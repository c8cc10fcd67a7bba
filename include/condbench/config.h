#pragma once
// A model's family and shape (docs/design.md §1). Torch-free: the native engine and the CUDA kernels use it.
//
// Two families share the early-exit contract (exit heads after every block, exit ids 1..blocks+1,
// the same exit rule and output): `mlp`, the question's MLP, and `transformer`, an encoder of
// torch.nn.TransformerEncoderLayer layers with an exit head on token 0 after each. A config holds
// every family's sizes; only its own family's are read.
#include <cstdint>
#include <string>
#include <vector>

namespace condbench {

enum class ModelFamily { mlp, transformer };
const char* to_string(ModelFamily family);  // "mlp", "transformer"

struct ModelConfig {
  // mlp
  int in_features = 32;
  int hidden = 64;
  // both families
  int num_classes = 10;
  int blocks = 3;  // mlp blocks, transformer layers
  ModelFamily family = ModelFamily::mlp;
  // transformer
  int d_model = 256;
  int heads = 4;
  int ffn = 1024;
  int seq = 32;

  // The transformer's defaults: 6 layers of d_model 256, 4 heads, ffn 1024, 32 tokens.
  static ModelConfig transformer();

  // Exit ids run 1..blocks+1; blocks+1 is the final head.
  int num_exits() const { return blocks + 1; }
  int final_exit() const { return blocks + 1; }
  // One input row: {in_features} (mlp) or {seq, d_model} (transformer); input is [batch, row...].
  std::vector<int64_t> row_shape() const;
  std::vector<int64_t> input_shape(int64_t batch) const;  // {batch, row_shape...}
  int64_t row_elements() const;
  // Width of the representation the exit heads read: hidden (mlp) or d_model (transformer).
  int width() const { return family == ModelFamily::mlp ? hidden : d_model; }
  // Throws condbench::Error naming the field when a size is out of range.
  void validate() const;
  // "in_features=32 hidden=64 num_classes=10 blocks=3";
  // "model=transformer d_model=256 heads=4 ffn=1024 seq=32 num_classes=10 blocks=6".
  std::string describe() const;

  friend bool operator==(const ModelConfig& a, const ModelConfig& b) {
    if (a.family != b.family || a.num_classes != b.num_classes || a.blocks != b.blocks) return false;
    if (a.family == ModelFamily::mlp) return a.in_features == b.in_features && a.hidden == b.hidden;
    return a.d_model == b.d_model && a.heads == b.heads && a.ffn == b.ffn && a.seq == b.seq;
  }
  friend bool operator!=(const ModelConfig& a, const ModelConfig& b) { return !(a == b); }
};

}  // namespace condbench
