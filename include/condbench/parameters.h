#pragma once
// A model's parameters as plain arrays, in state_dict order and PyTorch layout. Each family names
// its parameters (ModelFamily::parameters, src/families/); the seeded initialisation is here, and
// the LibTorch module and the native engine are both built from it.
#include <cstdint>
#include <string>
#include <vector>

#include "condbench/config.h"

namespace condbench {

struct ParameterSpec {
  std::string name;            // "backbone.0.weight", "layers.2.self_attn.in_proj_weight", "final.proj.bias", ...
  std::vector<int64_t> shape;  // a Linear's weight [out, in], a bias or a LayerNorm's vectors [n]
  // Seeded values are center + U(-bound, bound): torch.nn.Linear's default range for a Linear's
  // weight and bias (bound 1/sqrt(in)); 1 ± 0.1 and 0 ± 0.1 for a LayerNorm's weight and bias, so
  // that a test notices a norm's parameters swapped or ignored.
  float center;
  float bound;
};

// The family's parameters (ModelFamily::parameters). mlp: backbone.{i}.{weight,bias} for every
// block, then exit{k}.{weight,bias}, then final.{weight,bias}. transformer: layers.{i}.<torch.nn.
// TransformerEncoderLayer's names> for every layer, then exit{k}.{norm,proj}.{weight,bias}, then
// final.{norm,proj}.{weight,bias}.
std::vector<ParameterSpec> parameter_specs(const ModelConfig& config);

// How many floats the specs hold: the weights' part of the memory budget (memory_budget.h).
double parameter_floats(const std::vector<ParameterSpec>& specs);

// What families build their specs from: torch.nn.Linear(in, out)'s weight [out, in] and bias,
// seeded in U(-1/sqrt(in), 1/sqrt(in)) as torch does; torch.nn.LayerNorm(n)'s weight and bias.
float linear_bound(int in);
void add_linear(std::vector<ParameterSpec>& specs, const std::string& prefix, int in, int out);
void add_norm(std::vector<ParameterSpec>& specs, const std::string& prefix, int n);

// One flat float array per ParameterSpec, in the same order.
using FlatParameters = std::vector<std::vector<float>>;

// Every spec's values drawn from SplitMix64(seed) in spec order: the same seed gives the same
// weights on every machine.
FlatParameters seeded_parameters(const ModelConfig& config, uint64_t seed);
// The same for any list of specs (the decoder's: decoder_parameters).
FlatParameters seeded_parameters(const std::vector<ParameterSpec>& specs, uint64_t seed);

// Seeded input rows, N(0, 1), row-major [rows, row_shape...].
std::vector<float> seeded_inputs(const ModelConfig& config, int64_t rows, uint64_t seed);

}  // namespace condbench
