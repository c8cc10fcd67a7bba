#include "condbench/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "condbench/error.h"
#include "families/families.h"

namespace condbench {

namespace {

// How to fix a state_dict that is almost right, from its keys alone: "" when no known mistake fits.
std::string key_hint(const StateDict& state_dict) {
  std::vector<std::string> keys;
  for (const auto& item : state_dict) keys.push_back(item.first);
  if (keys.empty()) return "";
  // A prefix on every key: nn.DataParallel and DistributedDataParallel add "module.",
  // torch.compile "_orig_mod.", a wrapper its attribute's name.
  for (size_t dot = keys[0].find('.'); dot != std::string::npos; dot = keys[0].find('.', dot + 1)) {
    const std::string prefix = keys[0].substr(0, dot + 1);
    const bool everywhere = std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
      return k.rfind(prefix, 0) == 0 &&
             (k.compare(prefix.size(), 9, "backbone.") == 0 || k.compare(prefix.size(), 7, "layers.") == 0 ||
              k.compare(prefix.size(), 4, "exit") == 0 || k.compare(prefix.size(), 6, "final.") == 0);
    });
    if (everywhere)
      return "; every key starts with '" + printable(prefix) +
             "' (nn.DataParallel adds 'module.', torch.compile '_orig_mod.'): save without it, e.g. "
             "torch.save({k.removeprefix('" +
             printable(prefix) + "'): v for k, v in sd.items()}, path)";
  }
  // Backbone Linears numbered with gaps: an nn.Sequential with activations between them.
  std::set<int> numbers;
  for (const std::string& k : keys) {
    int n = 0;
    char tail[8] = {};
    if (std::sscanf(k.c_str(), "backbone.%d.%7s", &n, tail) == 2 && std::string(tail) == "weight") numbers.insert(n);
  }
  if (!numbers.empty() && *numbers.rbegin() != static_cast<int>(numbers.size()) - 1) {
    std::string listed;
    for (const int n : numbers) listed += (listed.empty() ? "" : ", ") + std::to_string(n);
    return "; the backbone Linears are numbered " + listed +
           " (an nn.Sequential with activations between them?): condbench expects backbone.0, backbone.1, ... "
           "in order; renumber them before saving";
  }
  return "";
}

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

at::Tensor from_flat(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  return at::from_blob(const_cast<float*>(values.data()), shape, at::kFloat).clone();
}

}  // namespace

EarlyExitModelImpl::EarlyExitModelImpl(const ModelConfig& config, uint64_t seed) : config_(config) {
  config_.validate();
  build();
  assign(seeded_parameters(config_, seed));
}

EarlyExitModelImpl::EarlyExitModelImpl(const ModelConfig& config, const StateDict& state_dict) : config_(config) {
  config_.validate();
  build();
  load_state_dict(state_dict);
}

// Registers every parameter under its dotted name, creating a plain Module for each prefix
// ("layers" -> "0" -> "self_attn"), as PyTorch's own nesting does.
void EarlyExitModelImpl::build() {
  for (const ParameterSpec& spec : parameter_specs(config_)) {
    torch::nn::Module* owner = this;
    std::string rest = spec.name;
    for (size_t dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      const std::string part = rest.substr(0, dot);
      auto children = owner->named_children();
      std::shared_ptr<torch::nn::Module> child;
      if (const auto* found = children.find(part)) {
        child = *found;
      } else {
        child = owner->register_module(part, std::make_shared<torch::nn::Module>());
      }
      owner = child.get();
      rest = rest.substr(dot + 1);
    }
    parameters_.push_back(owner->register_parameter(rest, at::zeros(spec.shape)));
  }
}

void EarlyExitModelImpl::assign(const FlatParameters& params) {
  const at::NoGradGuard no_grad;
  const auto specs = parameter_specs(config_);
  for (size_t p = 0; p < specs.size(); ++p) parameters_[p].copy_(from_flat(params[p], specs[p].shape));
}

void check_state_dict(const ModelConfig& config, const StateDict& state_dict) {
  std::map<std::string, at::Tensor> given;
  for (const auto& [name, tensor] : state_dict) given[name] = tensor;
  std::set<std::string> expected;
  for (const ParameterSpec& spec : parameter_specs(config)) {
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

void EarlyExitModelImpl::load_state_dict(const StateDict& state_dict) {
  // Check everything before changing anything, so a bad file leaves the model as it was.
  check_state_dict(config_, state_dict);
  std::map<std::string, at::Tensor> given(state_dict.begin(), state_dict.end());
  // A NaN or infinite weight makes every confidence NaN: thresholds calibrated from them mean
  // nothing, and sorting NaNs is undefined behaviour.
  for (const ParameterSpec& spec : parameter_specs(config_))
    if (!given[spec.name].isfinite().all().item<bool>())
      fail("weights: '" + spec.name + "' holds NaN or infinite values");
  const at::NoGradGuard no_grad;
  const auto specs = parameter_specs(config_);
  for (size_t p = 0; p < specs.size(); ++p) parameters_[p].copy_(given[specs[p].name].to(at::kCPU, at::kFloat));
}

StateDict EarlyExitModelImpl::state_dict() const {
  StateDict out;
  const auto specs = parameter_specs(config_);
  for (size_t p = 0; p < specs.size(); ++p)
    out.emplace_back(specs[p].name, parameters_[p].detach().to(at::kCPU).clone());
  return out;
}

FlatParameters EarlyExitModelImpl::flat_parameters() const {
  FlatParameters params;
  for (const auto& [name, tensor] : state_dict()) {
    const at::Tensor t = tensor.contiguous();
    params.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return params;
}

NativeModel EarlyExitModelImpl::native() const {
  if (config_.family != ModelFamily::mlp)
    fail(std::string("the native engine runs the mlp family only, not ") + to_string(config_.family));
  return NativeModel::from_parameters(config_, flat_parameters());
}

std::shared_ptr<const TorchLayers> EarlyExitModelImpl::layers(const at::Device& device) const {
  std::vector<at::Tensor> on_device;
  for (const at::Tensor& p : parameters_) on_device.push_back(p.detach().to(device).contiguous());
  switch (config_.family) {
    case ModelFamily::mlp:
      return families::mlp_layers(config_, std::move(on_device));
    case ModelFamily::transformer:
      return families::transformer_layers(config_, std::move(on_device));
  }
  fail("unknown model family");
}

at::Tensor EarlyExitModelImpl::exit_confidences(const at::Tensor& x) const {
  const at::NoGradGuard no_grad;
  const std::shared_ptr<const TorchLayers> l = layers(x.device());
  // In slices of rows, so a large model's intermediates (a transformer's [rows, seq, ffn]) stay small.
  constexpr int64_t kSlice = 256;
  std::vector<at::Tensor> slices;
  for (int64_t start = 0; start < x.size(0); start += kSlice) {
    std::vector<at::Tensor> confidences;
    at::Tensor h = x.narrow(0, start, std::min(kSlice, x.size(0) - start));
    for (int k = 0; k < config_.blocks; ++k) {
      h = l->block(k, h);
      confidences.push_back(at::softmax(l->head(k, h), -1).amax(-1));
    }
    slices.push_back(at::stack(confidences, 1));
  }
  return at::cat(slices, 0);
}

ModelConfig infer_config(const StateDict& state_dict, int heads) {
  std::map<std::string, at::Tensor> given(state_dict.begin(), state_dict.end());
  auto require = [&](const std::string& key, int64_t dims) -> const at::Tensor& {
    auto it = given.find(key);
    if (it == given.end()) fail("weights: missing key '" + key + "'" + key_hint(state_dict));
    if (it->second.dim() != dims)
      fail("weights: '" + key + "' has " + std::to_string(it->second.dim()) + " dimensions, expected " +
           std::to_string(dims));
    return it->second;
  };
  // Blocks 0, 1, ... while `prefix N suffix` is there; a key of a later block after a gap names the gap.
  auto count = [&](const std::string& prefix, const std::string& suffix) {
    int n = 0;
    while (given.count(prefix + std::to_string(n) + suffix)) ++n;
    for (const auto& [key, tensor] : given) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string rest = key.substr(prefix.size());
      const size_t digits = rest.find_first_not_of("0123456789");
      if (digits == 0 || digits == std::string::npos || digits > 6) continue;
      if (std::stoi(rest.substr(0, digits)) > n)
        fail("weights: missing key '" + prefix + std::to_string(n) + suffix + "' before '" + printable(key) + "'" +
             key_hint(state_dict));
    }
    return n;
  };
  // The family from its keys: a transformer's blocks are layers.N..., an mlp's backbone.N...
  const bool transformer =
      std::any_of(given.begin(), given.end(), [](const auto& entry) { return entry.first.rfind("layers.", 0) == 0; });
  ModelConfig config;
  if (transformer) {
    config = ModelConfig::transformer();
    const at::Tensor& linear1 = require("layers.0.linear1.weight", 2);
    config.ffn = static_cast<int>(linear1.size(0));
    config.d_model = static_cast<int>(linear1.size(1));
    config.heads = heads;
    require("layers.0.self_attn.in_proj_weight", 2);
    config.num_classes = static_cast<int>(require("final.proj.weight", 2).size(0));
    config.blocks = count("layers.", ".self_attn.in_proj_weight");
  } else {
    const at::Tensor& first = require("backbone.0.weight", 2);
    config.hidden = static_cast<int>(first.size(0));
    config.in_features = static_cast<int>(first.size(1));
    config.num_classes = static_cast<int>(require("final.weight", 2).size(0));
    config.blocks = count("backbone.", ".weight");
  }
  config.validate();
  return config;
}

}  // namespace condbench
