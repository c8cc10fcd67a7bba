#pragma once
// The decoder's benchmarks (docs/design.md §8): token cases (token_case.h) of DecoderModel, and
// the decoder's work they run on.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <set>
#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/scenario.h"
#include "decoder_sizes.h"
#include "token_case.h"

namespace condbench {

// early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/model:decoder/vocab:<v>/.../blocks:<exits - 1>
using DecoderCase = TokenCase<DecoderModel>;

// A decoder case's work, as the runner builds it: the seeded model, a scenario's thresholds (forced,
// or calibrated), the prompts a case of `batch` rows walks, int64 [sequences, batch, prompt], the
// models the flags select (decoder_sizes.h), and --export-workload's folder of a model: weights.pt,
// prompts.pt (the prompts a batch-1 case walks, int64 [sequences, prompt]) and workload.json
// (family "decoder", every size, the name axes and every scenario's thresholds).
const DecoderModel& decoder_model(const DecoderConfig& config);
const std::vector<float>& decoder_thresholds(const DecoderConfig& config, const Scenario& scenario);
at::Tensor decoder_case_prompts(const DecoderConfig& config, int64_t batch);
nlohmann::json export_decoder_model(const DecoderConfig& config, const std::set<Scenario>& scenarios,
                                    const std::filesystem::path& folder);
inline constexpr TokenWork<DecoderModel> kDecoderWork{&decoder_model, &decoder_thresholds, &decoder_case_prompts,
                                                      &decoder_configs, &export_decoder_model};

}  // namespace condbench
