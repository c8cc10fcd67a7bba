#pragma once
// When two strategies' results count as the same answer (condbench-infer's `agree`): identical
// exit ids, and logits within a relative tolerance (CPU and GPU sum in different orders).
#include <ATen/core/Tensor.h>

namespace condbench {

constexpr double kAgreementRelativeTolerance = 1e-4;

// exit ids int [rows]; logits float [rows, classes]; any device.
bool results_agree(const at::Tensor& exit_ids_a, const at::Tensor& logits_a, const at::Tensor& exit_ids_b,
                   const at::Tensor& logits_b, double relative_tolerance = kAgreementRelativeTolerance);

}  // namespace condbench
