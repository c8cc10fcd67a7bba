#include "condbench/parameters.h"

#include <cmath>

#include "condbench/random.h"

namespace condbench {

namespace {
void add_linear(std::vector<ParameterSpec>& specs, const std::string& prefix, int in, int out) {
  specs.push_back({prefix + ".weight", {out, in}, in});
  specs.push_back({prefix + ".bias", {out}, in});
}
}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModelConfig& config) {
  std::vector<ParameterSpec> specs;
  for (int i = 0; i < config.blocks; ++i)
    add_linear(specs, "backbone." + std::to_string(i), i == 0 ? config.in_features : config.hidden, config.hidden);
  for (int k = 1; k <= config.blocks; ++k)
    add_linear(specs, "exit" + std::to_string(k), config.hidden, config.num_classes);
  add_linear(specs, "final", config.hidden, config.num_classes);
  return specs;
}

FlatParameters seeded_parameters(const ModelConfig& config, uint64_t seed) {
  SplitMix64 rng(seed);
  FlatParameters params;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    size_t count = 1;
    for (int64_t d : spec.shape) count *= static_cast<size_t>(d);
    const float bound = 1.0f / std::sqrt(static_cast<float>(spec.fan_in));
    std::vector<float> values(count);
    for (float& v : values) v = rng.uniform(-bound, bound);
    params.push_back(std::move(values));
  }
  return params;
}

std::vector<float> seeded_inputs(const ModelConfig& config, int64_t rows, uint64_t seed) {
  return normal_floats(seed, static_cast<size_t>(rows) * config.in_features);
}

}  // namespace condbench
