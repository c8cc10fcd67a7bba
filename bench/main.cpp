// condbench: the benchmark runner (docs/design.md §4). Project flags select what to run; Google
// Benchmark's own flags (--benchmark_filter, --benchmark_out, ...) work as usual. main reads the
// flags once (registration.h, benchmark_out.h, benchmark_flags.h), checks the outputs, and runs
// (runner.h).
#include <benchmark/benchmark.h>

#include <iostream>

#include "benchmark_case.h"
#include "cli.h"
#include "condbench/error.h"
#include "condbench/output_file.h"
#include "runner.h"
#include "test_slowdown.h"

namespace {

int run(int argc, char** argv) {
  if (condbench::cli::asks_for_help(argc, argv)) return condbench::print_help(argv[0]);
  const std::string twins = condbench::register_test_twins();  // before --strategy is read: it may name one
  condbench::BenchmarkOut out(argc, argv);
  const condbench::RunnerOptions options = condbench::parse_runner_options(argc, argv, out.target());
  // Google Benchmark's flags before anything else happens (the trace library, once attached, writes
  // its file at exit): a bad value is one line and exit code 2.
  const condbench::BenchmarkFlags flags = condbench::read_benchmark_flags(argc, argv, options.in_order);
  // Every output checked before anything runs (output_file.h): none may destroy what it did not make.
  // parse_runner_options checked them before a model file's compile; now the compiled folder too.
  condbench::check_outputs(condbench::runner_outputs(options, out.target()), condbench::runner_inputs(options));
  if (options.list) {
    condbench::print_strategies(options, std::cout);
    return 0;
  }
  if (!options.export_dir.empty()) return condbench::export_workloads(options);
  if (!condbench::start_run(options, flags, out, twins)) return 2;
  const std::vector<std::string> registered = condbench::register_benchmarks(options, flags);
  return condbench::run_benchmarks(options, flags, out, registered, argv[0]);
}

}  // namespace

int main(int argc, char** argv) {
  // The case kept prepared between benchmark calls goes when main returns, however it returns:
  // before static destruction, which CUDA does not outlive.
  struct ReleasedOnReturn {
    ~ReleasedOnReturn() { condbench::release_prepared_case(); }
  } const release_case;
  try {
    const int code = run(argc, argv);
    benchmark::Shutdown();
    return code;
  } catch (const std::exception& e) {
    std::cerr << "condbench: " << condbench::one_line(e) << "\n";
    return condbench::exit_code_for(e);
  } catch (...) {
    std::cerr << "condbench: internal error: an unknown exception\n";
    return 1;
  }
}
