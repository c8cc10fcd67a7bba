#pragma once
// The project flags of condbench (docs/design.md §4) and the benchmarks they register with Google Benchmark.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "benchmark_case.h"
#include "condbench/output_file.h"
#include "runner_options.h"

namespace condbench {

// --help: condbench's flags, one line each with its default (Google Benchmark's follow).
void print_flags(std::ostream& out);

// Takes condbench's own flags out of argv (Google Benchmark parses the rest) and validates them.
// `benchmark_out`: --benchmark_out's file (BenchmarkOut takes it first), checked with the other outputs
// against the inputs before a model file is compiled (its user's code runs then).
RunnerOptions parse_runner_options(int& argc, char** argv, const std::optional<std::string>& benchmark_out = {});

// The files the options write (with --benchmark_out's), and the files no output may overwrite or lie
// inside (--weights, --model-file as given, --model-weights, and once known the compiled folder and
// the files its module read while it loaded: a module it imports, weights model() loads), for
// check_outputs (condbench/output_file.h).
std::vector<OutputPath> runner_outputs(const RunnerOptions& options, const std::optional<std::string>& benchmark_out);
std::vector<InputPath> runner_inputs(const RunnerOptions& options);

// A run (not a listing) on a device this machine lacks is a flag error: one line, exit code 2,
// rather than every benchmark of that device skipped.
void require_devices_present(const RunnerOptions& options);

// Every (device, engine, strategy) x model x batch x scenario the options select, in run order.
std::vector<BenchmarkCase> select_cases(const RunnerOptions& options);

// Those of them, and of the token families' cases, that their strategy declares it cannot run (a
// run skips them), in order: --list prints them, a run whose every case is one says so first.
std::vector<UnsupportedCase> unsupported_cases(const RunnerOptions& options);

void register_cases(const std::vector<BenchmarkCase>& cases);

// --list: every registered strategy (device/engine/name) with what it declares, then, for the
// models and batches the flags select, the cases a strategy cannot run and why.
void print_strategies(const RunnerOptions& options, std::ostream& out);

}  // namespace condbench
