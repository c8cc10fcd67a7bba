#include "condbench/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

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

at::Tensor from_flat(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  return at::from_blob(const_cast<float*>(values.data()), shape, at::kFloat).clone();
}

}  // namespace

at::Tensor TorchLayers::confidence(const at::Tensor& logits) const { return at::softmax(logits, -1).amax(-1); }

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
