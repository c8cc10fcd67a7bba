#pragma once
// The masked forward (docs/design.md §2): every block and every head for every row; each row's result is
// picked on the device with `where`. Shared by masked (thresholds as host scalars) and
// masked_graph (thresholds in a device tensor the captured graph reads).
#include <ATen/ATen.h>

#include "condbench/strategy.h"

namespace condbench {

// threshold(k) gives exit k+1's threshold as a float or a 0-dim tensor.
template <typename ThresholdOf>
ExitOutput masked_forward(const TorchLayers& layers, const at::Tensor& x, const at::Tensor& final_exit_id,
                          ThresholdOf threshold) {
  const int blocks = layers.config().blocks;
  std::vector<at::Tensor> head_logits(blocks), fires(blocks);
  at::Tensor h = x;
  for (int k = 0; k < blocks; ++k) {
    h = layers.block(k, h);
    head_logits[k] = layers.head(k, h);
    fires[k] = layers.exit_test(head_logits[k], threshold(k));
  }
  at::Tensor logits = layers.head(blocks, h);
  at::Tensor exit_id = final_exit_id;
  // Walk the exits from last to first so that the first exit that fires is the one that stays.
  for (int k = blocks - 1; k >= 0; --k) {
    logits = at::where(fires[k].unsqueeze(1), head_logits[k], logits);
    exit_id = at::where(fires[k], k + 1, exit_id);
  }
  return {exit_id, logits};
}

}  // namespace condbench
