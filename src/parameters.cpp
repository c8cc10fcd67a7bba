#include "condbench/parameters.h"

#include <cmath>

#include "condbench/family.h"
#include "condbench/random.h"

namespace condbench {

float linear_bound(int in) { return 1.0f / std::sqrt(static_cast<float>(in)); }

void add_linear(std::vector<ParameterSpec>& specs, const std::string& prefix, int in, int out) {
  specs.push_back({prefix + ".weight", {out, in}, 0.0f, linear_bound(in)});
  specs.push_back({prefix + ".bias", {out}, 0.0f, linear_bound(in)});
}

void add_norm(std::vector<ParameterSpec>& specs, const std::string& prefix, int n) {
  specs.push_back({prefix + ".weight", {n}, 1.0f, 0.1f});
  specs.push_back({prefix + ".bias", {n}, 0.0f, 0.1f});
}

double parameter_floats(const std::vector<ParameterSpec>& specs) {
  double floats = 0;
  for (const ParameterSpec& spec : specs) {
    double n = 1;
    for (const int64_t d : spec.shape) n *= static_cast<double>(d);
    floats += n;
  }
  return floats;
}

std::vector<ParameterSpec> parameter_specs(const ModelConfig& config) {
  const StateDictContract* contract = config.family->state_dict();
  return contract ? contract->parameters(config) : std::vector<ParameterSpec>{};  // a model file's are its own
}

FlatParameters seeded_parameters(const ModelConfig& config, uint64_t seed) {
  return seeded_parameters(parameter_specs(config), seed);
}

FlatParameters seeded_parameters(const std::vector<ParameterSpec>& specs, uint64_t seed) {
  SplitMix64 rng(seed);
  FlatParameters params;
  for (const ParameterSpec& spec : specs) {
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
