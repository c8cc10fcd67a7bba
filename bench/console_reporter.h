#pragma once
// What condbench shows on the terminal while it runs (the JSON of --benchmark_out keeps everything):
//  - progress on stderr: repetition k of N, time elapsed, an estimate of the time left, the
//    benchmark that just finished; one line, rewritten in place;
//  - at the end, a table that reads in 100 columns: a block per device, model and batch, a row per
//    scenario and strategy with the median wall time per inference (µs, no exponents), its cv
//    across repetitions, and the counters that say what the strategy did; benchmarks that were
//    skipped, with their reason, below it.
// Google Benchmark's console reporter (--benchmark_format=console is not this: condbench uses
// this one unless another --benchmark_format is asked for) prints a 200-column line per
// repetition with every counter.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace condbench {

class ConsoleReporter final : public benchmark::BenchmarkReporter {
 public:
  // The progress line: none, drawn over itself (a terminal), or a line each (--progress into a log).
  enum class Progress { none, redrawn, lines };
  // expected_runs: repetitions to come in all (benchmarks x repetitions), for the progress line.
  ConsoleReporter(std::ostream& table, std::ostream& progress, size_t expected_runs, Progress style);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // "12.3", "0.371", "5209", "0.000412": three significant figures, never an exponent.
  static std::string number(double value);

 private:
  struct Row {
    double median_us = 0;
    double cv = -1;  // fraction; < 0: one repetition, no spread
    std::map<std::string, double> counters;
  };
  // `repetitions` more finished, the last of them `run`.
  void note_progress(const Run& run, size_t repetitions);
  void print_table();

  std::ostream& table_;
  std::ostream& progress_;
  size_t expected_runs_;
  Progress style_;
  size_t finished_runs_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, Row> rows_;                 // by benchmark name (without /real_time)
  std::map<std::string, size_t> repetitions_seen_;  // by name: repetitions the display was shown
  std::map<std::string, std::string> skipped_;      // name -> reason
};

}  // namespace condbench
