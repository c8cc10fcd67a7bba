#pragma once
// The model's parameters as plain arrays, in state_dict order and torch.nn.Linear layout. This is
// the one place that knows the parameter names (docs/design.md §1) and the seeded initialisation; the
// LibTorch module and the native engine are both built from it.
#include <cstdint>
#include <string>
#include <vector>

#include "condbench/config.h"

namespace condbench {

struct ParameterSpec {
  std::string name;            // "backbone.0.weight", "exit1.bias", "final.weight", ...
  std::vector<int64_t> shape;  // weight [out, in], bias [out]
  int fan_in;                  // in of the Linear it belongs to
};

// backbone.{i}.{weight,bias} for every block, then exit{k}.{weight,bias}, then final.{weight,bias}.
std::vector<ParameterSpec> parameter_specs(const ModelConfig& config);

// One flat float array per ParameterSpec, in the same order.
using FlatParameters = std::vector<std::vector<float>>;

// torch.nn.Linear's default ranges (U(-1/sqrt(in), 1/sqrt(in)) for weight and bias) drawn from
// SplitMix64(seed) in spec order: the same seed gives the same weights on every machine.
FlatParameters seeded_parameters(const ModelConfig& config, uint64_t seed);

// Seeded input rows, N(0, 1), row-major [rows, in_features].
std::vector<float> seeded_inputs(const ModelConfig& config, int64_t rows, uint64_t seed);

}  // namespace condbench
