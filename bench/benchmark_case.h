#pragma once
// One registered benchmark: a strategy on a workload under a scenario (docs/design.md §4), and the
// function Google Benchmark times.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

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

// Prepares the strategy, runs every pool batch once untimed to learn what each inference does
// (counters, exit ids), then times inferences walking the pool. Errors become SkipWithError.
void run_benchmark_case(benchmark::State& state, const BenchmarkCase& c);

// Why a case cannot run on this machine (no CUDA device, or what its strategy declares), or
// nothing: the case is skipped with the reason, not failed.
Unsupported why_skipped(const BenchmarkCase& c);

// --rounds: the round the calls of Google Benchmark from now on belong to (0, 1, ...), written on each
// repetition as the "round" counter; -1: not in rounds, no counter.
void set_round(int64_t round);

// Destroys the case kept prepared between calls (its strategy, its inputs on the device). Called
// once the benchmarks have run, before main returns: left to static destruction, a CUDA strategy
// would outlive the CUDA runtime and crash the exit (seen on an H200: SIGSEGV after the last
// benchmark, or LibTorch's "CUDA error" abort from a CUDA graph's destructor).
void release_prepared_case();

}  // namespace condbench
