#pragma once
// One registered benchmark: a strategy on a workload under a scenario (docs/design.md §4), and the
// function Google Benchmark times.
#include <benchmark/benchmark.h>

#include <string>

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

// Prepares the strategy, runs every pool batch once untimed to learn what each inference does
// (counters, exit ids), then times inferences walking the pool. Errors become SkipWithError.
void run_benchmark_case(benchmark::State& state, const BenchmarkCase& c);

}  // namespace condbench
