#pragma once
// The early-exit MLP's shape (docs/design.md §1). Torch-free: the native engine and the CUDA kernels use it.
#include <cstdint>
#include <string>

namespace condbench {

struct ModelConfig {
  int in_features = 32;
  int hidden = 64;
  int num_classes = 10;
  int blocks = 3;

  // Exit ids run 1..blocks+1; blocks+1 is the final head.
  int num_exits() const { return blocks + 1; }
  int final_exit() const { return blocks + 1; }
  // Throws condbench::Error naming the field when a size is out of range.
  void validate() const;
  std::string describe() const;  // "in_features=32 hidden=64 num_classes=10 blocks=3"

  friend bool operator==(const ModelConfig& a, const ModelConfig& b) {
    return a.in_features == b.in_features && a.hidden == b.hidden && a.num_classes == b.num_classes &&
           a.blocks == b.blocks;
  }
  friend bool operator!=(const ModelConfig& a, const ModelConfig& b) { return !(a == b); }
};

}  // namespace condbench
