#pragma once
// The decode step graph_cond captures (strategies/decoder/torch/cuda/graph_cond.cpp), over
// fixed-size tensors, its branches behind `when(predicate, depth, body)`. The layers up to exit 1
// run for every row; then at each exit, after the rows that fire have left:
//
//   IF (some row still runs)  { the next exit's layers for every row, the left rows' states frozen
//                               with `where` (their keys and values propagated by it), ... }
//   IF (no row runs any more) { only the deeper layers' keys and values, from every row's state }
//
// so a step whose rows all leave at exit 1 runs exit 1's layers and the projections, and a step
// with one row running deeper runs the deeper layers for the batch. Every write is in place into
// ConditionalStepState, which is what a graph's bodies can write: a body that does not run leaves
// outputs that are already right. The same function runs with `when` deciding on the host
// (tests/test_decoder.cpp checks the step that way on the CPU) or as IF nodes in a CUDA graph.
#include <ATen/ATen.h>

#include "condbench/decoder/torch_decoder.h"

namespace condbench {

struct ConditionalStepState {
  at::Tensor logits;   // float [batch, vocab]: each row's chosen exit's logits
  at::Tensor exit_id;  // int32 [batch]
  at::Tensor left;     // bool [batch]: the rows that have left
  at::Tensor ran;      // int32 [2]: layers run in full, and heads evaluated, for the batch (counted by the step)

  void allocate(const DecoderConfig& c, int64_t batch, const at::Device& device) {
    const auto on = at::TensorOptions().device(device);
    logits = at::zeros({batch, c.vocab}, on.dtype(at::kFloat));
    exit_id = at::zeros({batch}, on.dtype(at::kInt));
    left = at::zeros({batch}, on.dtype(at::kBool));
    ran = at::zeros({2}, on.dtype(at::kInt));
  }
};

// layer(l, h): layer l on every row (writing the cache), propagate(l, h): only layer l's keys and
// values for every row, threshold(e): exit e's threshold (a float or a 0-d device tensor),
// when(predicate, depth, body): runs body where predicate (bool, one element) holds, a body
// `depth` IFs deep (1..num_exits - 1). h: the rows' states entering layer 0.
template <typename Layer, typename Propagate, typename Threshold, typename When>
void conditional_step(const TorchDecoder& decoder, const at::Tensor& h, ConditionalStepState& state, Layer&& layer,
                      Propagate&& propagate, Threshold&& threshold, When&& when) {
  const DecoderConfig& c = decoder.config();
  state.left.zero_();
  state.exit_id.fill_(c.final_exit());
  state.ran.zero_();
  // From exit `exit`'s first layer `first`, `depth` IFs deep.
  const auto from = [&](const auto& self, int exit, int first, at::Tensor h, int depth) -> void {
    const int last = c.exit_layer(exit);
    for (int l = first; l < last; ++l) h = at::where(state.left.unsqueeze(1), h, layer(l, h));
    at::Tensor counted = state.ran.select(0, 0);
    counted.add_(last - first);
    counted = state.ran.select(0, 1);
    counted.add_(1);
    const at::Tensor logits = decoder.logits(h);
    if (exit == c.final_exit()) {
      state.logits.copy_(at::where(state.left.unsqueeze(1), state.logits, logits));
      return;
    }
    const at::Tensor fire = TorchDecoder::exit_test(logits, threshold(exit)).logical_and(state.left.logical_not());
    state.logits.copy_(at::where(fire.unsqueeze(1), logits, state.logits));
    state.exit_id.masked_fill_(fire, exit);
    state.left.logical_or_(fire);
    const at::Tensor running = state.left.logical_not().any();
    when(running, depth, [&] { self(self, exit + 1, last, h, depth + 1); });
    when(running.logical_not(), depth, [&] {
      for (int l = last; l < c.layers; ++l) propagate(l, h);
    });
  };
  from(from, 1, 0, h, 1);
}

}  // namespace condbench
