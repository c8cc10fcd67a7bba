#pragma once
// The decode steps the device-decided graph strategies capture, over fixed-size tensors, their
// branches behind two callables: `when(predicate, depth, body)`, an IF (body once where the
// predicate holds), and `loop(predicate, depth, body)`, a WHILE (body for as long as the
// predicate holds, read again after every pass). The layers of exit e's segment (after exit
// e - 1's, up to exit e's) run for every row, the rows that have left frozen with `where` (their
// keys and values propagated by it); a row leaves at the first exit it fires.
//
// conditional_step (graph_cond, strategies/decoder/torch/cuda/graph_cond.cpp): exit 1's segment,
// then at each exit
//
//   IF (some row still runs)  { the next exit's segment, ... }
//   IF (no row runs any more) { only the deeper layers' keys and values, from every row's state }
//
// a nest as deep as the exits, holding the deeper layers' projections once per exit.
//
// loop_step (graph_while, strategies/decoder/torch/cuda/graph_while.cpp): the same decisions as
// two loops of constant depth, each layer in the graph once whatever the depth:
//
//   WHILE (some row runs and an exit is left) { IF (next == e) { exit e's segment }, for each e; ++next }
//   WHILE (an exit is left)                   { IF (next == e) { its layers' keys and values }, for each e; ++next }
//
// So a step whose rows all leave at exit 1 runs exit 1's layers and the projections, and a step
// with one row running deeper runs the deeper layers for the batch. Every write is in place into
// ConditionalStepState, which is what a graph's bodies can write: a body that does not run leaves
// outputs that are already right. The same functions run with `when` and `loop` deciding on the
// host (tests/test_decoder.cpp checks both steps that way on the CPU) or as conditional nodes.
#include <ATen/ATen.h>

#include "condbench/decoder/torch_decoder.h"

namespace condbench {

struct ConditionalStepState {
  at::Tensor logits;   // float [batch, vocab]: each row's chosen exit's logits
  at::Tensor exit_id;  // int32 [batch]
  at::Tensor left;     // bool [batch]: the rows that have left
  at::Tensor ran;      // int32 [2]: layers run in full, and heads evaluated, for the batch (counted by the step)
  // loop_step's own: the rows' states between passes, the exit whose segment the next pass runs,
  // the loop's predicate, and which exit that is (one flag per exit: the IFs' predicates).
  at::Tensor hidden;     // float [batch, d_model]
  at::Tensor next_exit;  // int32, 0-d
  at::Tensor going;      // bool, 0-d
  at::Tensor at_exit;    // bool [num_exits]
  at::Tensor exits;      // int32 [num_exits]: 1, 2, ..., num_exits

  void allocate(const DecoderConfig& c, int64_t batch, const at::Device& device) {
    const auto on = at::TensorOptions().device(device);
    logits = at::zeros({batch, c.vocab}, on.dtype(at::kFloat));
    exit_id = at::zeros({batch}, on.dtype(at::kInt));
    left = at::zeros({batch}, on.dtype(at::kBool));
    ran = at::zeros({2}, on.dtype(at::kInt));
    hidden = at::zeros({batch, c.d_model}, on.dtype(at::kFloat));
    next_exit = at::zeros({}, on.dtype(at::kInt));
    going = at::zeros({}, on.dtype(at::kBool));
    at_exit = at::zeros({c.num_exits()}, on.dtype(at::kBool));
    exits = at::arange(1, c.num_exits() + 1, on.dtype(at::kInt));
  }
};

// What a step is made of: layer(l, h), layer l on every row's state h (writing the cache);
// propagate(l, h), only layer l's keys and values for every row; threshold(e), exit e's threshold
// (a float or a 0-d device tensor).
template <typename Layer, typename Propagate, typename Threshold>
struct StepParts {
  Layer layer;
  Propagate propagate;
  Threshold threshold;
};
template <typename Layer, typename Propagate, typename Threshold>
StepParts(Layer, Propagate, Threshold) -> StepParts<Layer, Propagate, Threshold>;

namespace step_detail {

inline int first_layer(const DecoderConfig& c, int exit) { return c.exit_layer(exit - 1); }

inline void reset(const DecoderConfig& c, ConditionalStepState& state) {
  state.left.zero_();
  state.exit_id.fill_(c.final_exit());
  state.ran.zero_();
}

// Exit `exit`'s segment on the rows' states h, counted, then its head: the rows still running
// that fire leave with these logits (at the final exit, every row still running). The new states.
template <typename Parts>
at::Tensor segment(const TorchDecoder& decoder, at::Tensor h, ConditionalStepState& state, int exit, Parts& parts) {
  const DecoderConfig& c = decoder.config();
  const int first = first_layer(c, exit), last = c.exit_layer(exit);
  for (int l = first; l < last; ++l) h = at::where(state.left.unsqueeze(1), h, parts.layer(l, h));
  at::Tensor counted = state.ran.select(0, 0);
  counted.add_(last - first);
  counted = state.ran.select(0, 1);
  counted.add_(1);
  const at::Tensor logits = decoder.logits(h);
  if (exit == c.final_exit()) {
    state.logits.copy_(at::where(state.left.unsqueeze(1), state.logits, logits));
    return h;
  }
  const at::Tensor fire = TorchDecoder::exit_test(logits, parts.threshold(exit)).logical_and(state.left.logical_not());
  state.logits.copy_(at::where(fire.unsqueeze(1), logits, state.logits));
  state.exit_id.masked_fill_(fire, exit);
  state.left.logical_or_(fire);
  return h;
}

}  // namespace step_detail

// h: the rows' states entering layer 0. Bodies nest up to num_exits - 1 deep.
template <typename Parts, typename When>
void conditional_step(const TorchDecoder& decoder, const at::Tensor& h, ConditionalStepState& state, Parts parts,
                      When&& when) {
  const DecoderConfig& c = decoder.config();
  step_detail::reset(c, state);
  const auto from = [&](const auto& self, int exit, const at::Tensor& entering, int depth) -> void {
    const at::Tensor out = step_detail::segment(decoder, entering, state, exit, parts);
    if (exit == c.final_exit()) return;
    const at::Tensor running = state.left.logical_not().any();
    when(running, depth, [&] { self(self, exit + 1, out, depth + 1); });
    when(running.logical_not(), depth, [&] {
      for (int l = c.exit_layer(exit); l < c.layers; ++l) parts.propagate(l, out);
    });
  };
  from(from, 1, h, 1);
}

// h: the rows' states entering layer 0. Loops are 1 deep, the IFs in them 2.
template <typename Parts, typename When, typename Loop>
void loop_step(const TorchDecoder& decoder, const at::Tensor& h, ConditionalStepState& state, Parts parts, When&& when,
               Loop&& loop) {
  const DecoderConfig& c = decoder.config();
  step_detail::reset(c, state);
  state.hidden.copy_(h);
  state.next_exit.fill_(1);
  state.going.fill_(true);
  // One pass: the body of the exit numbered next_exit, then the next one.
  const auto pass = [&](const auto& body) {
    at::eq_out(state.at_exit, state.exits, state.next_exit);
    for (int exit = 1; exit <= c.final_exit(); ++exit) when(state.at_exit.select(0, exit - 1), 2, [&] { body(exit); });
    state.next_exit.add_(1);
  };
  loop(state.going, 1, [&] {
    pass([&](int exit) { state.hidden.copy_(step_detail::segment(decoder, state.hidden, state, exit, parts)); });
    at::logical_and_out(state.going, state.left.logical_not().any(), state.next_exit.le(c.final_exit()));
  });
  // Every row left before the final exit: the deeper segments' keys and values, from the states
  // the rows left with.
  at::le_out(state.going, state.next_exit, c.final_exit());
  loop(state.going, 1, [&] {
    pass([&](int exit) {
      for (int l = step_detail::first_layer(c, exit); l < c.exit_layer(exit); ++l) parts.propagate(l, state.hidden);
    });
    at::le_out(state.going, state.next_exit, c.final_exit());
  });
}

}  // namespace condbench
