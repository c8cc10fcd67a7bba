#pragma once
// The project flags of condbench (docs/design.md §4) and the benchmarks they register with Google Benchmark.
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "benchmark_case.h"
#include "condbench/nvtx.h"
#include "decoder_case.h"

namespace condbench {

// One model the run benchmarks, and the batches it runs at.
struct ModelSelection {
  ModelConfig config;
  std::vector<int64_t> batches;
};

struct RunnerOptions {
  std::vector<Device> devices;
  std::vector<std::string> strategies;  // empty: all
  std::vector<Scenario> scenarios;      // empty: all of each model depth
  // Default: every family's sweep (ModelFamily's runs: the mlp at hidden 64 and 1024, 3 blocks,
  // batch 1 and 64; the transformer at its default sizes, 6 layers, batch 1 and 8).
  std::vector<ModelSelection> models;
  // --model=decoder: the decoder models (decoder_case.h) and their batches; empty: none.
  std::vector<DecoderConfig> decoders;
  std::vector<int64_t> decoder_batches;
  std::string weights;
  std::map<std::string, int> weights_given;  // with --weights: the sizes the file cannot say, from flags
  nvtx::Level nvtx = nvtx::Level::off;
  bool full = false;
  int threads = 0;                     // 0: LibTorch's default
  std::string export_dir;              // --export-workload: write the workloads and run nothing
  std::string trace_out;               // --trace: the NVTX ranges as a Chrome trace
  std::string checkpoint_out;          // --checkpoint-out: JSON of every finished benchmark, as they finish
  bool require_quiet = false;          // refuse to start on a busy machine
  bool in_order = false;               // repetitions in registration order, not randomly interleaved
  double answer_budget_s = 0;          // --answer-budget: rounds until the answer is decided (answer_budget.h)
  bool progress = false;               // --progress: on stderr even when it is not a terminal
  bool list = false;                   // --list: print the strategies and what they declare, run nothing
  std::vector<std::string> selecting;  // the flags given that run part of the default suite
  // --model-file's inputs, which no output may overwrite or lie inside: the file or folder given, its
  // --model-weights, and the compiled folder it was read from.
  std::string model_file_given, model_file_weights, model_file_folder;
};

// --help: condbench's flags, one line each with its default (Google Benchmark's follow).
void print_flags(std::ostream& out);

// Takes condbench's own flags out of argv (Google Benchmark parses the rest) and validates them.
RunnerOptions parse_runner_options(int& argc, char** argv);

// A run (not a listing) on a device this machine lacks is a flag error: one line, exit code 2,
// rather than every benchmark of that device skipped.
void require_devices_present(const RunnerOptions& options);

// Every (device, engine, strategy) x model x batch x scenario the options select, in run order.
std::vector<BenchmarkCase> select_cases(const RunnerOptions& options);

void register_cases(const std::vector<BenchmarkCase>& cases);

// The decoder cases the options select (none without --model=decoder).
std::vector<DecoderCase> select_decoder_cases(const RunnerOptions& options);

// --list: every registered strategy (device/engine/name) with what it declares, then, for the
// models and batches the flags select, the cases a strategy cannot run and why.
void print_strategies(const RunnerOptions& options, std::ostream& out);

}  // namespace condbench
