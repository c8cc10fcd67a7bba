#pragma once
// A plain early-exit forward written for the tests, for both families: double precision, straight
// from docs/design.md §1 and the torch-layout parameters, sharing no code with any strategy.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "condbench/config.h"
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

}  // namespace condbench::testing
