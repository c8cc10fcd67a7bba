#pragma once
// --checkpoint-out=FILE: the run's Google Benchmark JSON, rewritten (atomically) after every
// benchmark that finishes, so a run cut short — a time limit on a lent GPU machine, a crash in a
// later case, Ctrl-C — still leaves a valid result file of everything that ran. The display on
// the terminal is Google Benchmark's own, passed through unchanged.
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>
#include <vector>

namespace condbench {

class CheckpointReporter final : public benchmark::BenchmarkReporter {
 public:
  CheckpointReporter(benchmark::BenchmarkReporter& display, std::string path);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  // Writes what the JSON reporter has produced so far, closed as a complete document.
  void checkpoint(bool finished);

  benchmark::BenchmarkReporter& display_;
  benchmark::JSONReporter json_;
  std::ostringstream document_, errors_;
  std::string path_;
};

}  // namespace condbench
