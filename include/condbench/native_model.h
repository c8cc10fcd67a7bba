#pragma once
// The model in the native engine's layout: every Linear's weight transposed ([in][out], see
// exit_math.h), copied once from the parameters. Torch-free, so CPU loops and CUDA uploads use it.
#include <vector>

#include "condbench/config.h"
#include "condbench/parameters.h"

namespace condbench {

struct NativeLinear {
  static constexpr int kPitchMultiple = 8;

  int in = 0;
  int out = 0;
  int pitch = 0;            // out rounded up to kPitchMultiple
  std::vector<float> wt;    // [in][pitch], zero past out
  std::vector<float> bias;  // [pitch], zero past out

  // From torch's layout: weight [out][in] row-major, bias [out] (nullptr: none, all zero).
  static NativeLinear from_torch(const float* weight, const float* bias, int in, int out);
};

struct NativeModel {
  ModelConfig config;
  std::vector<NativeLinear> blocks;  // backbone.0 .. backbone.{blocks-1}
  std::vector<NativeLinear> heads;   // heads[k] is exit{k+1} for k < blocks; heads[blocks] is final

  static NativeModel from_parameters(const ModelConfig& config, const FlatParameters& params);
};

}  // namespace condbench
