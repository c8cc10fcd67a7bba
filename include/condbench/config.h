#pragma once
// A model's family and shape (docs/design.md §1). Torch-free: the native engine and the CUDA kernels use it.
//
// Every family shares the early-exit contract (exit heads after every block, exit ids 1..blocks+1,
// the same exit rule and output); what differs between families — their sizes, parameters, costs
// and forward — is the family's descriptor (condbench/family.h). A config is a family, its sizes in
// the order of the family's axes, and the two sizes every family has.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "condbench/memory_budget.h"

namespace condbench {

class ModelFamily;  // condbench/family.h

// The most rows a batch holds, in every tool and for every model (--batch), and what the aoti
// engine's packages are exported to accept (rules.h gives it to condbench.aoti): far above any
// sweep, so a typo fails at the flag.
inline constexpr int64_t kMaxBatch = 1 << 16;

struct ModelConfig {
  // The most classes and blocks any family's model has (each axis has its own most: FamilyAxis::max).
  static constexpr int kMaxClasses = 1 << 16;
  static constexpr int kMaxBlocks = 256;

  // Never null in a config that is used: model_config(name) or ModelFamily::config() make one.
  const ModelFamily* family = nullptr;
  std::vector<int> sizes;  // one per family->axes(), in that order
  int num_classes = 10;
  int blocks = 3;  // mlp blocks, transformer layers

  // The size of the family's axis `key`; throws condbench::Error when the family has none.
  int size(std::string_view key) const;
  ModelConfig& set(std::string_view key, int value);
  bool has(std::string_view key) const;

  // Exit ids run 1..blocks+1; blocks+1 is the final head.
  int num_exits() const { return blocks + 1; }
  int final_exit() const { return blocks + 1; }
  // One input row: {in_features} (mlp) or {seq, d_model} (transformer); input is [batch, row...].
  std::vector<int64_t> row_shape() const;
  std::vector<int64_t> input_shape(int64_t batch) const;  // {batch, row_shape...}
  int64_t row_elements() const;
  // Width of the representation the exit heads read: hidden (mlp) or d_model (transformer).
  int width() const;
  // Throws condbench::Error naming the field when a size is out of range, or when the weights alone
  // are over the memory budget (memory_budget.h).
  void validate() const;
  // What the model holds for a batch of `rows` rows (0: its weights alone): its weights, then its
  // family's memory_terms. Check it with MemoryNeed::require before anything is allocated.
  MemoryNeed memory_need(int64_t rows) const;
  // "in_features=32 hidden=64 num_classes=10 blocks=3";
  // "model=transformer d_model=256 heads=4 ffn=1024 seq=32 num_classes=10 blocks=6".
  std::string describe() const;
  // describe() naming the family always, as a line beside other families' reads: "model=mlp in_features=32 ...".
  std::string describe_named() const;
  // The benchmark-name axes that say which model this is, in order, without the batch:
  // {hidden, blocks} (mlp); {model, d_model, heads, ffn, seq, blocks} (transformer).
  std::vector<std::pair<std::string, std::string>> name_axes() const;
  // A directory name for this model's files: "mlp-in_features32-hidden64-c10-b3".
  std::string tag() const;

  friend bool operator==(const ModelConfig& a, const ModelConfig& b) {
    return a.family == b.family && a.sizes == b.sizes && a.num_classes == b.num_classes && a.blocks == b.blocks;
  }
  friend bool operator!=(const ModelConfig& a, const ModelConfig& b) { return !(a == b); }
};

}  // namespace condbench
