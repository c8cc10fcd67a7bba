#include "condbench/native_model.h"

#include <algorithm>

#include "condbench/error.h"

namespace condbench {

NativeLinear NativeLinear::from_torch(const float* weight, const float* bias, int in, int out) {
  NativeLinear linear;
  linear.in = in;
  linear.out = out;
  linear.pitch = (out + kPitchMultiple - 1) / kPitchMultiple * kPitchMultiple;
  linear.wt.assign(static_cast<size_t>(in) * linear.pitch, 0.0f);
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i)
      linear.wt[static_cast<size_t>(i) * linear.pitch + o] = weight[static_cast<size_t>(o) * in + i];
  linear.bias.assign(linear.pitch, 0.0f);
  if (bias != nullptr) std::copy(bias, bias + out, linear.bias.begin());
  return linear;
}

NativeModel NativeModel::from_parameters(const ModelConfig& config, const FlatParameters& params) {
  const std::vector<ParameterSpec> specs = parameter_specs(config);
  if (params.size() != specs.size())
    fail("native model: expected " + std::to_string(specs.size()) + " parameters, got " +
         std::to_string(params.size()));
  NativeModel model;
  model.config = config;
  // specs come in (weight, bias) pairs: blocks first, then the exit heads and the final head.
  for (size_t p = 0; p < specs.size(); p += 2) {
    const auto& shape = specs[p].shape;
    NativeLinear linear = NativeLinear::from_torch(params[p].data(), params[p + 1].data(), static_cast<int>(shape[1]),
                                                   static_cast<int>(shape[0]));
    if (static_cast<int>(model.blocks.size()) < config.blocks)
      model.blocks.push_back(std::move(linear));
    else
      model.heads.push_back(std::move(linear));
  }
  return model;
}

}  // namespace condbench
