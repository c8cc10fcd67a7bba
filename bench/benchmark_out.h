#pragma once
// --benchmark_out=FILE: the run's record, written when the run ends in --benchmark_out_format
// (json unless given), atomically: under a temporary name beside FILE, renamed into place. A Ctrl-C
// removes the temporary (install_signal_cleanup); a failed rename keeps it and says where. condbench
// writes it rather than Google Benchmark, which would write each of --answer-budget's rounds over
// the one before.
#include <memory>
#include <optional>
#include <string>

#include "condbench/output_file.h"
#include "run_record.h"

namespace condbench {

class BenchmarkOut {
 public:
  // Takes --benchmark_out and --benchmark_out_format out of argv; throws condbench::Error for a bad
  // format or a file given twice.
  BenchmarkOut(int& argc, char** argv);
  // The file asked for (nullopt: none), for the output policy's check before anything runs.
  const std::optional<std::string>& target() const { return target_; }
  // After the check: the temporary, created now, so an unwritable place fails before the run.
  void open();
  // A write that fails names the cause and where the results are now: in the checkpoint when it
  // holds them all, else nowhere.
  void write(const RunRecord& record);

 private:
  std::optional<std::string> target_;
  std::unique_ptr<PendingFile> pending_;  // destroyed uncommitted: the temporary goes
  std::string format_;
};

}  // namespace condbench
