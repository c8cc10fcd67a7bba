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

// condbench's flags, then Google Benchmark's (on cli::asks_for_help): exit code 0.
int print_help(char* argv0);

// --export-workload: every selected model's workload written; exit code 0.
int export_workloads(const RunnerOptions& options);

// A run's start, once its flags and outputs are checked, in this order: the devices it names
// present, the trace attached (condbench-trace.so records every NVTX range and writes --trace's
// file at exit), --benchmark_out opened, Google Benchmark given its flags, the threads, the test
// slowdown and the answer budget's flags checked (condbench::Error), the NVTX level, and the run's
// context (context.h). False where Google Benchmark refused a flag: exit code 2.
bool start_run(const RunnerOptions& options, const BenchmarkFlags& flags, BenchmarkOut& out, const std::string& twins);

// Registers every benchmark the options select, with what the context says of them (the
// packages built ahead, the decoders' weights), and checks each model's exit scores on its pool
// before anything runs (then names the model file's compiled folder). Returns their names in
// registration order.
std::vector<std::string> register_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags);

// Runs what is registered (or lists it), writes --benchmark_out, and returns the exit code: 0, 1
// when a benchmark failed or the checkpoint is incomplete, 2 when nothing ran.
int run_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags, BenchmarkOut& out,
                   const std::vector<std::string>& registered, char* argv0);

}  // namespace condbench
