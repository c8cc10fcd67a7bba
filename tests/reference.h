#pragma once
// A plain early-exit forward written for the tests, for both families: double precision, straight
// from docs/design.md §1 and the torch-layout parameters, sharing no code with any strategy.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "condbench/config.h"
#include "condbench/decoder/config.h"
#include "condbench/parameters.h"
#include "condbench/strategy.h"

namespace condbench::testing {

struct ReferenceResult {
  std::vector<int> exit_id;                 // [rows]
  std::vector<std::vector<double>> logits;  // [rows][num_classes]
  // For each logit, sum_i |w_i h_i| + |b|: the size of what its dot product added up. Float error
  // in a logit is relative to this (cancellation can make the logit itself tiny), so tolerances
  // are taken relative to max(|logit|, magnitude).
  std::vector<std::vector<double>> magnitude;
  std::vector<std::vector<double>> confidence;  // [rows][blocks]: max softmax at each exit head
};

// Every head's logits for every row, the full depth (thresholds not applied yet).
struct ReferenceHeads {
  int blocks = 0;
  std::vector<std::vector<std::vector<double>>> logits, magnitude;  // [row][head][class]
  std::vector<std::vector<double>> confidence;                      // [row][exit head]
};
ReferenceHeads reference_heads(const ModelConfig& config, const FlatParameters& params, const at::Tensor& x);
// The first exit whose confidence is strictly above its threshold, for the first `rows` rows.
ReferenceResult pick_exits(const ReferenceHeads& heads, const std::vector<float>& thresholds, int64_t rows = -1);

// reference_heads then pick_exits.
ReferenceResult reference_forward(const ModelConfig& config, const FlatParameters& params, const at::Tensor& x,
                                  const std::vector<float>& thresholds);

// Strategies registered for a device.
std::vector<const StrategyInfo*> strategies_on(Device device);

// Exit ids identical, logits within `rtol` of the reference, relative to max(|logit|, magnitude).
// Returns a failure naming the first row that differs.
::testing::AssertionResult matches_reference(const ExitOutput& out, const ReferenceResult& ref, double rtol);

// The mlp of in_features `in`, width `hidden`, `classes` classes and `blocks` blocks.
ModelConfig mlp_config(int in, int hidden, int classes, int blocks);

// Seeded float input [rows, row_shape...].
at::Tensor seeded_input(const ModelConfig& config, int64_t rows, uint64_t seed);

// The decoder (docs/design.md §8) for one row, written out in double precision without a cache:
// every step runs the whole sequence so far through every layer with a causal mask, each earlier
// position frozen after the layers its token ran (h = active ? layer(h) : h), so its keys and
// values at deeper layers come from its state at the exit. A strategy that matches it has a right
// cache, right propagation and right decisions at once.
struct DecoderReferenceStep {
  int exit = 0;                    // 1..num_exits
  int64_t token = 0;               // the argmax of that exit's logits
  std::vector<double> logits;      // [vocab] of that exit
  std::vector<double> confidence;  // the largest softmax probability at each exit the token reached
};

class ReferenceDecoder {
 public:
  // What the keys and values of the layers a token skipped are: the right answer (projected from
  // its state at the exit), or one of two mistakes a test must be able to tell from it.
  enum class Skipped { propagated, zero, computed_in_full };

  ReferenceDecoder(const DecoderConfig& config, const FlatParameters& params, std::vector<int64_t> prompt,
                   Skipped skipped = Skipped::propagated);
  // The next token from `input` at the next position, leaving at the first exit whose confidence
  // is above its threshold, or at `forced_exit` when it is positive.
  DecoderReferenceStep step(int64_t input, const std::vector<float>& thresholds, int forced_exit = 0);
  // Forgets the last step, to take it again with another exit.
  void undo();

 private:
  const DecoderConfig config_;
  const FlatParameters& params_;
  Skipped skipped_;
  std::vector<int64_t> tokens_;  // one per position so far
  std::vector<int> depth_;       // layers each position's token ran
};

}  // namespace condbench::testing
