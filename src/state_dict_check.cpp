// The reading of a state_dict's keys and shapes that every model's contract shares (condbench/model.h):
// StateDictShapes, check_parameters and the hints on a near miss. Its own file, so that what reads a
// state_dict links it without the model's forward (the fuzzing harnesses: scripts/fuzz).
#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <set>

#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/model.h"

namespace condbench {

std::string shape_text(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string key_hint(const StateDict& state_dict) {
  std::vector<std::string> keys;
  for (const auto& item : state_dict) keys.push_back(item.first);
  if (keys.empty()) return "";
  // A prefix on every key: nn.DataParallel and DistributedDataParallel add "module.",
  // torch.compile "_orig_mod.", a wrapper its attribute's name.
  auto starts_a_model_key = [](const std::string& key, size_t at) {
    if (key.compare(at, 4, "exit") == 0 || key.compare(at, 6, "final.") == 0) return true;
    return std::any_of(families().begin(), families().end(), [&](const Family* family) {
      const StateDictKeys* contract = family->state_dict_keys();
      return contract && key.compare(at, contract->block_prefix().size(), contract->block_prefix()) == 0;
    });
  };
  for (size_t dot = keys[0].find('.'); dot != std::string::npos; dot = keys[0].find('.', dot + 1)) {
    const std::string prefix = keys[0].substr(0, dot + 1);
    const bool everywhere = std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
      return k.rfind(prefix, 0) == 0 && starts_a_model_key(k, prefix.size());
    });
    if (everywhere)
      return "; every key starts with '" + printable(prefix) +
             "' (nn.DataParallel adds 'module.', torch.compile '_orig_mod.'): save without it, e.g. "
             "torch.save({k.removeprefix('" +
             printable(prefix) + "'): v for k, v in sd.items()}, path)";
  }
  for (const Family* family : families())
    if (const StateDictKeys* contract = family->state_dict_keys())
      if (std::string hint = contract->weights_hint(keys); !hint.empty()) return hint;
  return "";
}

StateDictShapes::StateDictShapes(const StateDict& state_dict) : state_dict_(state_dict) {
  for (const auto& [key, tensor] : state_dict) shapes_[key] = tensor.sizes().vec();
}

const std::vector<int64_t>& StateDictShapes::require(const std::string& key, int64_t dims) const {
  const auto it = shapes_.find(key);
  if (it == shapes_.end()) fail("weights: missing key '" + key + "'" + key_hint(state_dict_));
  if (static_cast<int64_t>(it->second.size()) != dims)
    fail("weights: '" + key + "' has " + std::to_string(it->second.size()) + " dimensions, expected " +
         std::to_string(dims));
  return it->second;
}

int StateDictShapes::count(const std::string& prefix, const std::string& suffix) const {
  int n = 0;
  while (has(prefix + std::to_string(n) + suffix)) ++n;
  for (const auto& [key, shape] : shapes_) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string rest = key.substr(prefix.size());
    const size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos || digits > 6) continue;
    if (std::stoi(rest.substr(0, digits)) >= n)  // block n has keys, but not this one
      fail("weights: missing key '" + prefix + std::to_string(n) + suffix + "' before '" + printable(key) + "'" +
           key_hint(state_dict_));
  }
  return n;
}

void check_parameters(const std::vector<ParameterSpec>& specs, const StateDict& state_dict) {
  std::map<std::string, at::Tensor> given;
  for (const auto& [name, tensor] : state_dict) given[name] = tensor;
  std::set<std::string> expected;
  for (const ParameterSpec& spec : specs) {
    expected.insert(spec.name);
    auto it = given.find(spec.name);
    if (it == given.end()) fail("weights: missing key '" + spec.name + "'" + key_hint(state_dict));
    const at::Tensor& t = it->second;
    if (!at::isFloatingType(t.scalar_type())) fail("weights: '" + spec.name + "' is not a floating-point tensor");
    if (t.sizes() != at::IntArrayRef(spec.shape))
      fail("weights: '" + spec.name + "' has shape " + shape_text(t.sizes()) + ", expected " + shape_text(spec.shape));
  }
  for (const auto& [name, tensor] : state_dict)
    if (!expected.count(name)) fail("weights: unexpected key '" + printable(name) + "'" + key_hint(state_dict));
}

}  // namespace condbench
