#pragma once
// Google Benchmark's flags as condbench reads them: checked once (a bad value is condbench's one
// line and exit code 2, not Google Benchmark's usage text), read once into BenchmarkFlags, and
// handed to Google Benchmark with condbench's defaults added. Nothing else scans argv for them.
//
// condbench's own flags are read by parse_runner_options (registration.h) and taken out of argv
// first; --benchmark_out and --benchmark_out_format by BenchmarkOut (benchmark_out.h), which writes
// the file itself.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace condbench {

struct BenchmarkFlags {
  std::string format = "console";                    // --benchmark_format: the display
  std::string filter;                                // --benchmark_filter, "" for none
  std::string filter_source = "--benchmark_filter";  // or "BENCHMARK_FILTER": where `filter` was given
  std::string repetitions;                           // --benchmark_repetitions, or condbench's default (10)
  std::string min_time;                              // --benchmark_min_time in seconds, or condbench's default (0.05)
  bool list_tests = false;                           // --benchmark_list_tests: list, run nothing
  // Repetitions of all benchmarks in random order (condbench's default, off with --in-order or
  // --benchmark_enable_random_interleaving=false).
  bool interleaved = false;
  // condbench records every repetition and shows or writes only the aggregates where these ask
  // (run_record.h), so Google Benchmark is not given them.
  bool report_aggregates_only = false, display_aggregates_only = false;
  // --benchmark_context=KEY=VALUE,...: added by condbench, since Google Benchmark adds its entries
  // again (and warns) each time its flags are read, which --answer-budget does.
  std::vector<std::pair<std::string, std::string>> context;
  // What Google Benchmark is given: argv[0], the flags it reads (seconds rewritten as 1.7 reads
  // them), condbench's defaults.
  std::vector<std::string> args;

  // benchmark::Initialize on `args`; false (after Google Benchmark's own message) when an argument
  // is left that nobody reads.
  bool initialize() const;
};

// Throws condbench::Error for an argument left in argv (condbench's own flags taken out) that is
// none of Google Benchmark's: a typo is refused in every mode, before anything is compiled or run.
void refuse_unknown_flags(int argc, char** argv);

// Checks and reads Google Benchmark's flags from argv (condbench's own taken out already); throws
// condbench::Error for a bad value. `in_order`: condbench's --in-order.
BenchmarkFlags read_benchmark_flags(int argc, char** argv, bool in_order);

// From here on each call of Google Benchmark runs every selected benchmark once: one round (--rounds,
// --answer-budget). `argv0`: main's argv[0], which Google Benchmark keeps for every context it writes.
void one_repetition_per_call(char* argv0);

// Takes every --NAME=VALUE (and a bare --NAME, as an empty value) out of argv, and returns the last
// value, or nullopt; `given` counts them.
std::optional<std::string> take_flag(int& argc, char** argv, const char* name, int* given = nullptr);

}  // namespace condbench
