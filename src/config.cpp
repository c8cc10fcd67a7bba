#include "condbench/config.h"

#include <algorithm>

#include "condbench/error.h"
#include "condbench/family.h"

namespace condbench {

namespace {

void check_range(const std::string& field, int value, int lo, int hi) {
  if (value < lo || value > hi)
    fail(field + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(value));
}

const ModelFamily& family_of(const ModelConfig& config) {
  if (config.family == nullptr) fail("a model config without a family (model_config(name) makes one)");
  return *config.family;
}

size_t axis_index(const ModelConfig& config, std::string_view key) {
  const auto& axes = family_of(config).axes();
  const auto it = std::find_if(axes.begin(), axes.end(), [&](const FamilyAxis& a) { return a.key == key; });
  if (it == axes.end()) fail("the " + config.family->name() + " family has no size '" + std::string(key) + "'");
  return static_cast<size_t>(it - axes.begin());
}
}  // namespace

void Family::check_size(const FamilyAxis& axis, int value) { check_range(axis.key, value, 1, axis.max); }

std::string FamilyAxis::flag() const {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::vector<Family::TaggedModel> ModelFamily::tagged_models() const {
  std::vector<ModelConfig> configs = full_extras();
  configs.insert(configs.begin(), config());
  std::vector<TaggedModel> out;
  for (const ModelConfig& c : configs)
    out.push_back(tagged(c, c.tag(), {{"num_classes", c.num_classes}, {"blocks", c.blocks}}));
  return out;
}

void ModelFamily::example_rows(int64_t /*rows*/, at::Tensor& /*out*/) const {
  fail("the " + name() + " family's input is float values condbench draws; it has no example rows");
}

const FamilyAxis* Family::axis(std::string_view key) const {
  for (const FamilyAxis& a : axes_)
    if (a.key == key) return &a;
  return nullptr;
}

ModelConfig ModelFamily::config() const {
  ModelConfig config;
  config.family = this;
  config.blocks = default_blocks();
  config.num_classes = default_classes();
  for (const FamilyAxis& a : axes()) config.sizes.push_back(a.fallback);
  return config;
}

int ModelConfig::size(std::string_view key) const { return sizes.at(axis_index(*this, key)); }

ModelConfig& ModelConfig::set(std::string_view key, int value) {
  sizes.at(axis_index(*this, key)) = value;
  return *this;
}

bool ModelConfig::has(std::string_view key) const { return family_of(*this).axis(key) != nullptr; }

std::vector<int64_t> ModelConfig::row_shape() const { return family_of(*this).row_shape(*this); }

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

int ModelConfig::width() const { return family_of(*this).width(*this); }

void ModelConfig::validate() const {
  const ModelFamily& family = family_of(*this);
  if (sizes.size() != family.axes().size())
    fail("a " + family.name() + " config holds " + std::to_string(sizes.size()) + " sizes, expected " +
         std::to_string(family.axes().size()));
  // Upper bounds keep a typo from allocating tens of gigabytes; they are far above any sweep.
  check_range("num_classes", num_classes, 1, kMaxClasses);
  check_range("blocks", blocks, 1, kMaxBlocks);
  family.check_sizes(*this);
  family.check(*this);
  memory_need(0).require(describe());  // what a typo in a size makes huge
}

MemoryNeed ModelConfig::memory_need(int64_t rows) const {
  const auto size_of = [&](const std::string& name) -> double {
    if (name == "rows") return static_cast<double>(rows);
    if (name == "num_classes") return num_classes;
    if (name == "blocks") return blocks;
    return size(name);
  };
  return MemoryNeed::of_model(parameter_floats(parameter_specs(*this)), rows, family_of(*this).memory_terms(*this),
                              size_of);
}

std::string ModelConfig::describe() const {
  const ModelFamily& family = family_of(*this);
  std::string text = family.named_in_results() ? "model=" + family.name() + " " : "";
  if (const std::string words = family.sizes_text(*this); !words.empty()) text += words + " ";
  return text + "num_classes=" + std::to_string(num_classes) + " blocks=" + std::to_string(blocks);
}

std::string ModelConfig::describe_named() const {
  const ModelFamily& family = family_of(*this);
  return (family.named_in_results() ? "" : "model=" + family.name() + " ") + describe();
}

std::vector<std::pair<std::string, std::string>> ModelConfig::name_axes() const {
  return family_of(*this).name_axes(*this, blocks);
}

std::string ModelConfig::tag() const {
  return family_of(*this).tag_stem(*this) + "-c" + std::to_string(num_classes) + "-b" + std::to_string(blocks);
}

}  // namespace condbench
