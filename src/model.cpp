#include "condbench/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "condbench/error.h"

namespace condbench {

at::ScalarType input_dtype(const ModelConfig& config) {
  return config.family != nullptr && config.family->integer_input() ? at::kLong : at::kFloat;
}

at::Tensor input_rows(const ModelConfig& config, int64_t rows, uint64_t seed) {
  if (input_dtype(config) == at::kLong) {
    at::Tensor out;
    config.family->example_rows(rows, out);
    return out;
  }
  std::vector<float> values = seeded_inputs(config, rows, seed);
  return at::from_blob(values.data(), config.input_shape(rows), at::kFloat).clone();
}

namespace {

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

at::Tensor TorchLayers::confidence(const at::Tensor& logits) const { return at::softmax(logits, -1).amax(-1); }

std::string key_hint(const StateDict& state_dict) {
  std::vector<std::string> keys;
  for (const auto& item : state_dict) keys.push_back(item.first);
  if (keys.empty()) return "";
  // A prefix on every key: nn.DataParallel and DistributedDataParallel add "module.",
  // torch.compile "_orig_mod.", a wrapper its attribute's name.
  auto starts_a_model_key = [](const std::string& key, size_t at) {
    if (key.compare(at, 4, "exit") == 0 || key.compare(at, 6, "final.") == 0) return true;
    return std::any_of(model_families().begin(), model_families().end(), [&](const ModelFamily* family) {
      const StateDictContract* contract = family->state_dict();
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
  for (const ModelFamily* family : model_families())
    if (const StateDictContract* contract = family->state_dict())
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
  check_parameters(parameter_specs(config), state_dict);
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
  if (config_.family != &model_family("mlp"))
    fail("the native engine runs the mlp family only, not " + config_.family->name());
  return NativeModel::from_parameters(config_, flat_parameters());
}

std::shared_ptr<const TorchLayers> EarlyExitModelImpl::layers(const at::Device& device) const {
  std::vector<at::Tensor> on_device;
  for (const at::Tensor& p : parameters_) on_device.push_back(p.detach().to(device).contiguous());
  return config_.family->layers(config_, std::move(on_device), device);
}

at::Tensor EarlyExitModelImpl::exit_confidences(const at::Tensor& x) const {
  const at::NoGradGuard no_grad;
  // Where x is, unless the family runs on the other device only (a model file compiled for CUDA
  // calibrates its scenarios on the GPU): then there, the scores brought back to x's device.
  const bool here = config_.family->unsupported_on(x.is_cuda() ? "cuda" : "cpu").empty();
  const at::Device device = here ? x.device() : x.is_cuda() ? at::Device(at::kCPU) : at::Device(at::kCUDA, 0);
  const std::shared_ptr<const TorchLayers> l = layers(device);
  // In slices of rows, so a large model's intermediates (a transformer's [rows, seq, ffn]) stay small.
  constexpr int64_t kSlice = 256;
  std::vector<at::Tensor> slices;
  for (int64_t start = 0; start < x.size(0); start += kSlice) {
    std::vector<at::Tensor> confidences;
    at::Tensor h = x.narrow(0, start, std::min(kSlice, x.size(0) - start)).to(device);
    for (int k = 0; k < config_.blocks; ++k) {
      h = l->block(k, h);
      confidences.push_back(l->confidence(l->head(k, h)));
    }
    slices.push_back(at::stack(confidences, 1).to(x.device()));
  }
  return at::cat(slices, 0);
}

ModelConfig infer_config(const StateDict& state_dict, const std::map<std::string, int>& given) {
  const StateDictShapes shapes(state_dict);
  const auto& families = model_families();
  auto holds = [&](const ModelFamily* family) {
    if (!family->state_dict()) return false;
    const std::string prefix = family->state_dict()->block_prefix();
    return std::any_of(state_dict.begin(), state_dict.end(),
                       [&](const auto& entry) { return entry.first.rfind(prefix, 0) == 0; });
  };
  const auto found = std::find_if(families.begin(), families.end(), holds);
  if (found == families.end()) {
    std::string expected;
    for (const ModelFamily* family : families)
      if (family->state_dict())
        expected += (expected.empty() ? "'" : " or '") + family->state_dict()->block_prefix() + "0...' (" +
                    family->name() + ")";
    fail("weights: no key of a model family's first block, " + expected + key_hint(state_dict));
  }
  ModelConfig config = (*found)->config();
  (*found)->state_dict()->read_sizes(shapes, config);
  for (const FamilyAxis& axis : config.family->axes())
    if (!axis.from_weights && given.count(axis.key)) config.set(axis.key, given.at(axis.key));
  config.validate();
  return config;
}

}  // namespace condbench
