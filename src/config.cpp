#include "condbench/config.h"

#include "condbench/error.h"

namespace condbench {

namespace {
void check_range(const char* field, int value, int lo, int hi) {
  if (value < lo || value > hi)
    fail(std::string(field) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
         std::to_string(value));
}
}  // namespace

void ModelConfig::validate() const {
  // Upper bounds keep a typo from allocating tens of gigabytes; they are far above any sweep.
  check_range("in_features", in_features, 1, 1 << 16);
  check_range("hidden", hidden, 1, 1 << 16);
  check_range("num_classes", num_classes, 1, 1 << 16);
  check_range("blocks", blocks, 1, 256);
}

std::string ModelConfig::describe() const {
  return "in_features=" + std::to_string(in_features) + " hidden=" + std::to_string(hidden) +
         " num_classes=" + std::to_string(num_classes) + " blocks=" + std::to_string(blocks);
}

}  // namespace condbench
