#pragma once
// A condbench run, from its parsed flags to its exit code (docs/design.md §4): the workload export,
// the trace, the benchmarks registered in order (primitives first: the floors the report judges
// against, kept by a run cut short), the run with its display, record and answer budget, and the
// files written. main (bench/main.cpp) reads the flags and calls these in order.
#include <string>
#include <vector>

#include "benchmark_flags.h"
#include "benchmark_out.h"
#include "registration.h"

namespace condbench {

// --export-workload: every selected model's workload written; exit code 0.
int export_workloads(const RunnerOptions& options);

// --trace=FILE: condbench-trace.so, built beside this executable, records every NVTX range and
// writes FILE when the process exits (bench/trace/nvtx_injection.cpp).
void attach_trace(const std::string& file);

// Refuses flags that cannot go with --answer-budget; throws condbench::Error.
void check_answer_budget(const RunnerOptions& options, const BenchmarkFlags& flags);

// Registers every benchmark the options select, with what the context says of them (the
// packages built ahead, the decoders' weights), and checks each model's exit scores on its pool
// before anything runs. Returns their names in registration order.
std::vector<std::string> register_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags);

// Runs what is registered (or lists it), writes --benchmark_out, and returns the exit code: 0, 1
// when a benchmark failed or the checkpoint is incomplete, 2 when nothing ran.
int run_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags, BenchmarkOut& out,
                   const std::vector<std::string>& registered, char* argv0);

}  // namespace condbench
