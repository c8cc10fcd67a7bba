#pragma once
// The masked decode step, shared by masked (every position's own shapes) and masked_graph (one
// graph over fixed-size tensors): every layer and every exit's head for every row; a row that left
// keeps its state with `where`, so the deeper layers write keys and values projected from it.
#include <ATen/ATen.h>

#include "condbench/decoder/torch_decoder.h"

namespace condbench {

// h: the rows' states entering layer 0. layer(l, h): layer l on every row (writing the cache);
// threshold(e): exit e's threshold (a float, or a 0-d device tensor).
template <typename Layer, typename Threshold>
TokenOutput masked_step(const TorchDecoder& decoder, at::Tensor h, Layer&& layer, Threshold&& threshold) {
  const DecoderConfig& c = decoder.config();
  const int64_t batch = h.size(0);
  const auto on_device = at::TensorOptions().device(h.device());
  at::Tensor left = at::zeros({batch}, on_device.dtype(at::kBool));
  at::Tensor exit_id = at::full({batch}, c.final_exit(), on_device.dtype(at::kInt));
  at::Tensor logits;
  for (int l = 0, exit = 1; l < c.layers; ++l) {
    h = at::where(left.unsqueeze(1), h, layer(l, h));
    if (exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;
    const at::Tensor exit_logits = decoder.logits(h);
    const at::Tensor fire = TorchDecoder::exit_test(exit_logits, threshold(exit)).logical_and(left.logical_not());
    logits = logits.defined() ? at::where(fire.unsqueeze(1), exit_logits, logits) : exit_logits;
    exit_id = at::where(fire, exit, exit_id);
    left = left.logical_or(fire);
    ++exit;
  }
  const at::Tensor final_logits = decoder.logits(h);
  logits = logits.defined() ? at::where(left.unsqueeze(1), logits, final_logits) : final_logits;
  return {logits.argmax(-1), exit_id, logits};
}

}  // namespace condbench
