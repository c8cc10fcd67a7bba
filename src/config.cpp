#include "condbench/config.h"

#include "condbench/error.h"

namespace condbench {

namespace {
constexpr double kMaxWeights = 2147483648.0;  // 2^31 floats: 8 GiB

void check_range(const char* field, int value, int lo, int hi) {
  if (value < lo || value > hi)
    fail(std::string(field) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
         std::to_string(value));
}
}  // namespace

const char* to_string(ModelFamily family) {
  switch (family) {
    case ModelFamily::mlp:
      return "mlp";
    case ModelFamily::transformer:
      return "transformer";
  }
  return "?";
}

ModelConfig ModelConfig::transformer() {
  ModelConfig c;
  c.family = ModelFamily::transformer;
  c.blocks = 6;
  return c;
}

std::vector<int64_t> ModelConfig::row_shape() const {
  if (family == ModelFamily::mlp) return {in_features};
  return {seq, d_model};
}

std::vector<int64_t> ModelConfig::input_shape(int64_t batch) const {
  std::vector<int64_t> shape = row_shape();
  shape.insert(shape.begin(), batch);
  return shape;
}

int64_t ModelConfig::row_elements() const {
  int64_t n = 1;
  for (const int64_t d : row_shape()) n *= d;
  return n;
}

void ModelConfig::validate() const {
  // Upper bounds keep a typo from allocating tens of gigabytes; they are far above any sweep.
  check_range("num_classes", num_classes, 1, 1 << 16);
  check_range("blocks", blocks, 1, 256);
  double weights = 0;  // the large matrices: what a typo in a size makes huge
  if (family == ModelFamily::mlp) {
    check_range("in_features", in_features, 1, 1 << 16);
    check_range("hidden", hidden, 1, 1 << 16);
    weights = (static_cast<double>(in_features) + (blocks - 1.0) * hidden + (blocks + 1.0) * num_classes) * hidden;
  } else {
    check_range("d_model", d_model, 1, 1 << 14);
    check_range("heads", heads, 1, 1024);
    check_range("ffn", ffn, 1, 1 << 16);
    check_range("seq", seq, 1, 1 << 14);
    if (d_model % heads != 0)
      fail("heads must divide d_model, got d_model=" + std::to_string(d_model) + " heads=" + std::to_string(heads) +
           " (--heads sets it)");
    weights = blocks * (4.0 * d_model * d_model + 2.0 * d_model * ffn) + (blocks + 1.0) * d_model * num_classes;
  }
  if (weights > kMaxWeights)
    fail(describe() + " would hold " + std::to_string(static_cast<int64_t>(weights)) +
         " weights; condbench takes at most 2^31 (8 GiB)");
}

std::string ModelConfig::describe() const {
  const std::string tail = " num_classes=" + std::to_string(num_classes) + " blocks=" + std::to_string(blocks);
  if (family == ModelFamily::mlp)
    return "in_features=" + std::to_string(in_features) + " hidden=" + std::to_string(hidden) + tail;
  return "model=transformer d_model=" + std::to_string(d_model) + " heads=" + std::to_string(heads) +
         " ffn=" + std::to_string(ffn) + " seq=" + std::to_string(seq) + tail;
}

}  // namespace condbench
