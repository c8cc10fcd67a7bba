#pragma once
// One registered benchmark of a model family: a strategy on a workload under a scenario
// (docs/design.md §4), whose timed unit is one inference, walking the pool; case_runner.h runs it.
#include <string>
#include <utility>
#include <vector>

#include "case_runner.h"
#include "condbench/strategy.h"
#include "condbench/workload.h"

namespace condbench {

struct BenchmarkCase {
  const StrategyInfo* strategy = nullptr;
  ModelSource source;
  ModelConfig config;  // the source's config (read from the file when there is one)
  int64_t batch = 1;
  Scenario scenario;

  // early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/hidden:<h>/blocks:<n>, or for the
  // transformer .../batch:<b>/model:transformer/d_model:<d>/heads:<a>/ffn:<f>/seq:<s>/blocks:<n>
  std::string name() const;
};

// A case's benchmark name: early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>, then the
// model's axes (ModelConfig::name_axes, DecoderConfig::name_axes). Every case's name is made here.
std::string case_name(Device device, Engine engine, const std::string& strategy, const Scenario& scenario,
                      int64_t batch, const std::vector<std::pair<std::string, std::string>>& model_axes);

// How many batches of `batch` rows a case walks, of the `available` batches of its walk: all, or
// for a model whose pass over the pool would take long (a transformer) the prefix that holds
// kWalkFlops of full-depth work, but never fewer than kMinWalkRows rows, so that a mix:* scenario's
// shares show. The exported workload carries the batch-1 walk cut to it, for the peer.
size_t walked_batches(const ModelConfig& config, int64_t batch, size_t available);

// Why a case cannot run on this machine (no CUDA device, or what its strategy declares), or
// nothing: the case is skipped with the reason, not failed.
Unsupported why_skipped(const BenchmarkCase& c);

// The case as the runner runs it: made ready by preparing the strategy and running every pool batch
// once untimed to learn what each inference does (counters, exit ids); timed walking the pool.
TimedCase timed_case(const BenchmarkCase& c);

}  // namespace condbench
