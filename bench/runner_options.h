#pragma once
// What condbench's project flags select (docs/design.md §4), as parse_runner_options
// (registration.h) reads them: plain data, without Google Benchmark, so the run's context
// (context.h) can say what was selected in any tool.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "condbench/config.h"
#include "condbench/nvtx.h"
#include "condbench/scenario.h"
#include "condbench/strategy.h"  // Device
#include "token_models.h"

namespace condbench {

// One model the run benchmarks, and the batches it runs at.
struct ModelSelection {
  ModelConfig config;
  std::vector<int64_t> batches;
};

struct RunnerOptions {
  std::vector<Device> devices;
  std::vector<std::string> strategies;  // names or keys (StrategyEntry::answers_to); empty: all
  std::vector<Scenario> scenarios;      // empty: all of each model depth
  // Default: every family's sweep (ModelFamily's runs: the mlp at hidden 64 and 1024, 3 blocks,
  // batch 1 and 64; the transformer at its default sizes, 6 layers, batch 1 and 8).
  std::vector<ModelSelection> models;
  // The models of each family timed per token (token_models.h) the run selects, with their batches:
  // the default suite's, --model's or their size flags'.
  std::vector<std::shared_ptr<const TokenModels>> token_models;
  std::string weights;
  std::map<std::string, int> weights_given;  // with --weights: the sizes the file cannot say, from flags
  nvtx::Level nvtx = nvtx::Level::off;
  bool full = false;
  int threads = 0;                     // 0: LibTorch's default
  std::string export_dir;              // --export-workload: write the workloads and run nothing
  std::string trace_out;               // --trace: the NVTX ranges as a Chrome trace
  std::string kernel_trace_out;        // --kernel-trace: LibTorch's profiler over the run (kernel_trace.h)
  std::string checkpoint_out;          // --checkpoint-out: JSON of every finished benchmark, as they finish
  bool require_quiet = false;          // refuse to start on a busy machine
  int wait_quiet_s = 0;                // --wait-quiet: wait up to this long for a quiet machine first
  bool in_order = false;               // repetitions in registration order, not randomly interleaved
  bool rounds = false;                 // --rounds: each repetition a round of every benchmark (runner.cpp)
  double answer_budget_s = 0;          // --answer-budget: rounds until the answer is decided (answer_budget.h)
  bool progress = false;               // --progress: on stderr even when it is not a terminal
  bool list = false;                   // --list: print the strategies and what they declare, run nothing
  std::vector<std::string> selecting;  // the flags given that run part of the default suite
  // --model-file's inputs, which no output may overwrite or lie inside: the file or folder given, its
  // --model-weights, and the compiled folder it was read from.
  std::string model_file_given, model_file_weights, model_file_folder;
  std::vector<std::string> model_file_reads;  // what its module read while it loaded (a module, weights)
  std::string model_file_used;                // which folder and how old (ModelFileFlags::used), said before the run
};

}  // namespace condbench
