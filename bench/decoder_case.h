#pragma once
// One registered decoder benchmark (docs/design.md §8): a decoder strategy generating tokens under a
// scenario, timed per generated token (case_runner.h runs it), and the flags that select them.
#include <cstdint>
#include <string>
#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/scenario.h"
#include "decoder_sizes.h"

namespace condbench {

struct DecoderCase {
  const DecoderStrategyInfo* strategy = nullptr;
  DecoderConfig config;
  int64_t batch = 1;
  Scenario scenario;

  // early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/model:decoder/vocab:<v>/.../blocks:<exits - 1>
  std::string name() const;
};

// Every decoder strategy on `devices` named in `strategies` (empty: all) x config x batch x scenario
// (empty: every exit:K of the config, then the mixes).
std::vector<DecoderCase> select_decoder_cases(const std::vector<DecoderConfig>& configs,
                                              const std::vector<int64_t>& batches, const std::vector<Device>& devices,
                                              const std::vector<std::string>& strategies,
                                              const std::vector<Scenario>& scenarios);

void register_decoder_cases(const std::vector<DecoderCase>& cases);

// A decoder case's work, as the runner builds it (--export-workload writes it for the Python peer):
// the seeded model, a scenario's thresholds (forced, or calibrated), and the prompts a case of
// `batch` rows walks, int64 [sequences, batch, prompt].
const DecoderModel& decoder_model(const DecoderConfig& config);
const std::vector<float>& decoder_thresholds(const DecoderConfig& config, const Scenario& scenario);
at::Tensor decoder_case_prompts(const DecoderConfig& config, int64_t batch);

}  // namespace condbench
