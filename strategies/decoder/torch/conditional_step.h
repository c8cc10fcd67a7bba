#pragma once
// The decode steps the device-decided graph strategies capture, over fixed-size tensors, their
// branches behind three callables: `either(predicate, depth, then, otherwise)`, an IF-ELSE (then
// where the predicate holds, otherwise where it does not); `pick(index, depth, cases, body)`, a
// SWITCH (body(i) for the case the 0-d int32 index names, none outside [0, cases)); and
// `loop(predicate, depth, body)`, a WHILE (body for as long as the predicate holds, read again
// after every pass). The layers of exit e's segment (after exit e - 1's, up to exit e's) run for
// every row, the rows that have left frozen with `where` (their keys and values propagated by it);
// a row leaves at the first exit it fires.
//
// conditional_step (graph_cond, strategies/decoder/torch/cuda/graph_cond.cpp): exit 1's segment,
// then at each exit
//
//   IF (some row still runs) { the next exit's segment, ... }
//   ELSE                     { only the deeper layers' keys and values, from every row's state }
//
// a nest as deep as the exits, holding the deeper layers' projections once per exit. (One
// IF-ELSE node where two complementary IFs stood, each with its own predicate and set kernel.)
//
// loop_step (graph_while, strategies/decoder/torch/cuda/graph_while.cpp): the same decisions as
// two loops of constant depth, each layer in the graph once whatever the depth:
//
//   WHILE (some row runs and an exit is left) { SWITCH (segment) { case e - 1: exit e's segment }; ++segment }
//   WHILE (an exit is left)                   { SWITCH (segment) { case e - 1: its layers' keys and values }; ++segment
//   }
//
// (One SWITCH on the device counter where an IF per exit stood, each with its own predicate.) So
// a step whose rows all leave at exit 1 runs exit 1's layers and the projections, and a step with
// one row running deeper runs the deeper layers for the batch. Every write is in place into
// ConditionalStepState, which is what a graph's bodies can write: a body that does not run leaves
// outputs that are already right. The same functions run with the callables deciding on the host
// (tests/test_decoder.cpp checks both steps that way on the CPU) or as conditional nodes.
#include <ATen/ATen.h>

#include "condbench/decoder/torch_decoder.h"

namespace condbench {

struct ConditionalStepState {
  at::Tensor logits;   // float [batch, vocab]: each row's chosen exit's logits
  at::Tensor exit_id;  // int32 [batch]
  at::Tensor left;     // bool [batch]: the rows that have left
  at::Tensor ran;      // int32 [2]: layers run in full, and heads evaluated, for the batch (counted by the step)
  // loop_step's own: the rows' states between passes, the segment the next pass runs (exit e's is
  // e - 1: the SWITCH's case), and the loop's predicate.
  at::Tensor hidden;   // float [batch, d_model]
  at::Tensor segment;  // int32, 0-d
  at::Tensor going;    // bool, 0-d

  void allocate(const DecoderConfig& c, int64_t batch, const at::Device& device) {
    const auto on = at::TensorOptions().device(device);
    logits = at::zeros({batch, c.vocab}, on.dtype(at::kFloat));
    exit_id = at::zeros({batch}, on.dtype(at::kInt));
    left = at::zeros({batch}, on.dtype(at::kBool));
    ran = at::zeros({2}, on.dtype(at::kInt));
    hidden = at::zeros({batch, c.d_model}, on.dtype(at::kFloat));
    segment = at::zeros({}, on.dtype(at::kInt));
    going = at::zeros({}, on.dtype(at::kBool));
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
template <typename Parts, typename Either>
void conditional_step(const TorchDecoder& decoder, const at::Tensor& h, ConditionalStepState& state, Parts parts,
                      Either&& either) {
  const DecoderConfig& c = decoder.config();
  step_detail::reset(c, state);
  const auto from = [&](const auto& self, int exit, const at::Tensor& entering, int depth) -> void {
    const at::Tensor out = step_detail::segment(decoder, entering, state, exit, parts);
    if (exit == c.final_exit()) return;
    either(
        state.left.logical_not().any(), depth, [&] { self(self, exit + 1, out, depth + 1); },
        [&] {
          for (int l = c.exit_layer(exit); l < c.layers; ++l) parts.propagate(l, out);
        });
  };
  from(from, 1, h, 1);
}

// h: the rows' states entering layer 0. Loops are 1 deep, the SWITCH in them 2.
template <typename Parts, typename Pick, typename Loop>
void loop_step(const TorchDecoder& decoder, const at::Tensor& h, ConditionalStepState& state, Parts parts, Pick&& pick,
               Loop&& loop) {
  const DecoderConfig& c = decoder.config();
  step_detail::reset(c, state);
  state.hidden.copy_(h);
  state.segment.zero_();
  state.going.fill_(true);
  // One pass: the body of the exit whose segment is next, then the next one.
  const auto pass = [&](const auto& body) {
    pick(state.segment, 2, c.num_exits(), [&](int segment) { body(segment + 1); });
    state.segment.add_(1);
  };
  loop(state.going, 1, [&] {
    pass([&](int exit) { state.hidden.copy_(step_detail::segment(decoder, state.hidden, state, exit, parts)); });
    at::logical_and_out(state.going, state.left.logical_not().any(), state.segment.lt(c.num_exits()));
  });
  // Every row left before the final exit: the deeper segments' keys and values, from the states
  // the rows left with.
  at::lt_out(state.going, state.segment, c.num_exits());
  loop(state.going, 1, [&] {
    pass([&](int exit) {
      for (int l = step_detail::first_layer(c, exit); l < c.exit_layer(exit); ++l) parts.propagate(l, state.hidden);
    });
    at::lt_out(state.going, state.segment, c.num_exits());
  });
}

}  // namespace condbench
