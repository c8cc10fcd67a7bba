#pragma once
// What the decoder's equivalence tests share, on the CPU (tests/test_decoder.cpp) and on a GPU
// (tests/gpu/test_decoder_cuda.cpp): small decoders, scenarios, and the step-by-step check of a
// strategy against ReferenceDecoder (reference.h).
#include <ATen/ATen.h>

#include <set>
#include <string>
#include <vector>

#include "condbench/agreement.h"
#include "condbench/decoder/strategy.h"
#include "reference.h"

namespace condbench::testing {

// Float32 against double through the layers, relative to the largest logit of the step (at least 1).
constexpr double kDecoderLogitTolerance = 1e-4;
// A confidence this close to its threshold, or a runner-up logit this close to the top one, may
// go either way in float: the check then follows the strategy's choice from there on.
constexpr double kDecoderTieMargin = kTieMargin;

DecoderConfig small_decoder();
// Five layers, an exit after every second: exits after layers 2 and 4, the final one after 5.
DecoderConfig odd_decoder();

struct DecoderCase {
  std::string name;
  std::vector<float> thresholds;  // one per exit before the final one
};
// Every token sent to exit k.
DecoderCase forced_decoder_case(const DecoderConfig& c, int k);
// Prompts [batch, prompt], seeded, on the CPU.
at::Tensor decoder_prompts(const DecoderConfig& c, int64_t batch, uint64_t seed);
// Every confidence the reference sees at each exit when no token leaves, for `prompts`.
std::vector<std::vector<double>> decoder_confidences(const DecoderConfig& c, const FlatParameters& params,
                                                     const at::Tensor& prompts);
// A mix: each exit's threshold at quantile q of its confidences.
DecoderCase decoder_mix(const std::string& name, std::vector<std::vector<double>> at_exit, double q);
// Every token forced to each exit in turn, then mix:even and mix:late (quantiles 0.5 and 0.8 of
// the confidences of 4 seeded rows).
std::vector<DecoderCase> decoder_cases(const DecoderConfig& c, const FlatParameters& params);
// The registered decoder strategies on `device`.
std::vector<const DecoderStrategyInfo*> decoder_strategies_on(Device device);

// What a checked run did.
struct DecoderSeen {
  bool ran = true;  // false: the strategy declares it cannot run this batch (never batch 1)
  std::set<int> exits;
  int ties_followed = 0;
};
// Runs `info` on `batch` rows (where it supports them; every strategy must run one row) for two whole sequences beside
// the reference, with the same inputs (the reference's own tokens: teacher forcing), and compares every step's tokens,
// exit ids, logits and counters with gtest expectations. A divergence is a failure unless the reference's own numbers
// put it within a tie margin; the reference then takes the strategy's exit.
DecoderSeen check_decoder(const DecoderStrategyInfo& info, const DecoderConfig& c, const FlatParameters& params,
                          int64_t batch, const DecoderCase& scenario);

}  // namespace condbench::testing
