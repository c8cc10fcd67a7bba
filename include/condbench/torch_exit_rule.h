#pragma once
// The exit rule (math::exit_fires, condbench/exit_math.h) on tensors, for the torch strategies of
// every family: the one place LibTorch code compares a confidence with its threshold.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>

#include "condbench/exit_math.h"

namespace condbench::math {

// Bool, the confidences' shape: true where a confidence is strictly above the threshold, as
// exit_fires(float, float) says. threshold: a float, or a 0-d tensor on the confidences' device
// (what a captured graph reads, so a new threshold needs no new capture).
template <typename Threshold>
at::Tensor exit_fires(const at::Tensor& confidence, const Threshold& threshold) {
  return confidence > threshold;
}

// Whether every score is one the rule can take (score_in_range(float)).
inline bool scores_in_range(const at::Tensor& confidence) {
  return (confidence > 0).logical_and_(confidence <= 1).all().item<bool>();
}

}  // namespace condbench::math
