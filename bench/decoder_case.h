#pragma once
// The decoder's benchmarks (docs/design.md §8): token cases (token_case.h) of DecoderModel, and
// the decoder's work they run on.
#include <cstdint>
#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/scenario.h"
#include "decoder_sizes.h"
#include "token_case.h"

namespace condbench {

// early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/model:decoder/vocab:<v>/.../blocks:<exits - 1>
using DecoderCase = TokenCase<DecoderModel>;

// A decoder case's work, as the runner builds it (--export-workload writes it for the Python peer):
// the seeded model, a scenario's thresholds (forced, or calibrated), and the prompts a case of
// `batch` rows walks, int64 [sequences, batch, prompt].
const DecoderModel& decoder_model(const DecoderConfig& config);
const std::vector<float>& decoder_thresholds(const DecoderConfig& config, const Scenario& scenario);
at::Tensor decoder_case_prompts(const DecoderConfig& config, int64_t batch);
inline constexpr TokenWork<DecoderModel> kDecoderWork{&decoder_model, &decoder_thresholds, &decoder_case_prompts};

}  // namespace condbench
