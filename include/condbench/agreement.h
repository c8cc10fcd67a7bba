#pragma once
// When two strategies' results count as the same answer (condbench-infer's `agree`): identical
// exit ids, and logits within a relative tolerance (CPU and GPU sum in different orders).
#include <ATen/core/Tensor.h>

namespace condbench {

constexpr double kAgreementRelativeTolerance = 1e-4;
// Where two decodings part at a near tie — a confidence this close to its threshold, or a runner-up
// logit this close to the top one (relative to the row's largest, at least 1) — either way is
// right in float; a check follows the other's choice there rather than fail (docs/design.md §8).
constexpr double kTieMargin = 1e-5;

// A check of a result against the module it came from: the logits within absolute + relative x
// |logit|, and the exit id unless a score is within tie_margin of a threshold (either way is right).
struct Tolerances {
  double absolute_tolerance;
  double relative_tolerance;
  double tie_margin;
};

// When an AOTInductor package is accepted (condbench.inductor, the one path from a module to a package,
// for the built-in families' and decoders' packages as for a model file's parts and whole-model
// modules): its outputs against the module it was compiled from, on rows whose score is not within
// tie_margin of a threshold. Python reads it as data (rules.h: "compile_check").
inline constexpr Tolerances kCompileCheck{.absolute_tolerance = 1e-5, .relative_tolerance = 1e-4, .tie_margin = 1e-4};

// exit ids int [rows]; logits float [rows, classes]; any device.
bool results_agree(const at::Tensor& exit_ids_a, const at::Tensor& logits_a, const at::Tensor& exit_ids_b,
                   const at::Tensor& logits_b, double relative_tolerance = kAgreementRelativeTolerance);

}  // namespace condbench
