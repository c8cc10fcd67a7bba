#include "condbench/parameters.h"

#include <cmath>

#include "condbench/random.h"

namespace condbench {

namespace {

float linear_bound(int in) { return 1.0f / std::sqrt(static_cast<float>(in)); }

void add_linear(std::vector<ParameterSpec>& specs, const std::string& prefix, int in, int out) {
  specs.push_back({prefix + ".weight", {out, in}, 0.0f, linear_bound(in)});
  specs.push_back({prefix + ".bias", {out}, 0.0f, linear_bound(in)});
}

void add_norm(std::vector<ParameterSpec>& specs, const std::string& prefix, int n) {
  specs.push_back({prefix + ".weight", {n}, 1.0f, 0.1f});
  specs.push_back({prefix + ".bias", {n}, 0.0f, 0.1f});
}

std::vector<ParameterSpec> mlp_specs(const ModelConfig& config) {
  std::vector<ParameterSpec> specs;
  for (int i = 0; i < config.blocks; ++i)
    add_linear(specs, "backbone." + std::to_string(i), i == 0 ? config.in_features : config.hidden, config.hidden);
  for (int k = 1; k <= config.blocks; ++k)
    add_linear(specs, "exit" + std::to_string(k), config.hidden, config.num_classes);
  add_linear(specs, "final", config.hidden, config.num_classes);
  return specs;
}

// torch.nn.TransformerEncoderLayer's state_dict order; in_proj packs the query, key and value
// projections as rows [0, d), [d, 2d), [2d, 3d) of one [3d, d] weight.
std::vector<ParameterSpec> transformer_specs(const ModelConfig& config) {
  const int d = config.d_model;
  std::vector<ParameterSpec> specs;
  for (int i = 0; i < config.blocks; ++i) {
    const std::string layer = "layers." + std::to_string(i) + ".";
    specs.push_back({layer + "self_attn.in_proj_weight", {3 * d, d}, 0.0f, linear_bound(d)});
    specs.push_back({layer + "self_attn.in_proj_bias", {3 * d}, 0.0f, linear_bound(d)});
    add_linear(specs, layer + "self_attn.out_proj", d, d);
    add_linear(specs, layer + "linear1", d, config.ffn);
    add_linear(specs, layer + "linear2", config.ffn, d);
    add_norm(specs, layer + "norm1", d);
    add_norm(specs, layer + "norm2", d);
  }
  auto add_head = [&](const std::string& name) {
    add_norm(specs, name + ".norm", d);
    add_linear(specs, name + ".proj", d, config.num_classes);
  };
  for (int k = 1; k <= config.blocks; ++k) add_head("exit" + std::to_string(k));
  add_head("final");
  return specs;
}

}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModelConfig& config) {
  return config.family == ModelFamily::mlp ? mlp_specs(config) : transformer_specs(config);
}

FlatParameters seeded_parameters(const ModelConfig& config, uint64_t seed) {
  SplitMix64 rng(seed);
  FlatParameters params;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    size_t count = 1;
    for (int64_t d : spec.shape) count *= static_cast<size_t>(d);
    std::vector<float> values(count);
    for (float& v : values) v = spec.center + rng.uniform(-spec.bound, spec.bound);
    params.push_back(std::move(values));
  }
  return params;
}

std::vector<float> seeded_inputs(const ModelConfig& config, int64_t rows, uint64_t seed) {
  return normal_floats(seed, static_cast<size_t>(rows * config.row_elements()));
}

}  // namespace condbench
