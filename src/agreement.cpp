#include "condbench/agreement.h"

#include <ATen/ATen.h>

namespace condbench {

bool results_agree(const at::Tensor& exit_ids_a, const at::Tensor& logits_a, const at::Tensor& exit_ids_b,
                   const at::Tensor& logits_b, double relative_tolerance) {
  const at::Tensor ids_a = exit_ids_a.to(at::kCPU, at::kLong), ids_b = exit_ids_b.to(at::kCPU, at::kLong);
  const at::Tensor a = logits_a.to(at::kCPU, at::kDouble), b = logits_b.to(at::kCPU, at::kDouble);
  if (ids_a.sizes() != ids_b.sizes() || a.sizes() != b.sizes()) return false;
  if (!ids_a.equal(ids_b)) return false;
  if (a.numel() == 0) return true;
  // Relative to each row's largest logit, so that a logit near zero is not held to a tighter
  // absolute bound than its neighbours.
  const at::Tensor scale = at::maximum(b.abs(), b.abs().amax(-1, true)).clamp_min(1e-30);
  return ((a - b).abs() <= relative_tolerance * scale).all().item<bool>();
}

}  // namespace condbench
