#include "benchmark_out.h"

#include <fstream>

#include "benchmark_flags.h"
#include "condbench/error.h"

namespace condbench {

BenchmarkOut::BenchmarkOut(int& argc, char** argv) {
  int given = 0, formats = 0;
  target_ = take_flag(argc, argv, "--benchmark_out", &given);
  format_ = take_flag(argc, argv, "--benchmark_out_format", &formats).value_or("json");
  if (format_ != "json" && format_ != "csv" && format_ != "console")
    fail("--benchmark_out_format: '" + printable(format_) + "' is not json, csv or console");
  // Which of two files (or formats) was meant is a guess.
  if (given > 1) fail("--benchmark_out: given twice");
  if (formats > 1) fail("--benchmark_out_format: given twice");
}

void BenchmarkOut::open() {
  if (!target_) return;
  install_signal_cleanup();
  pending_ = std::make_unique<PendingFile>(*target_);
  if (!std::ofstream(pending_->temp_path())) fail("--benchmark_out: cannot write '" + *target_ + "'");
}

void BenchmarkOut::write(const RunRecord& record) {
  if (!pending_) return;
  try {
    pending_->write(record.document(format_));
    pending_->commit();
  } catch (const Error& e) {
    const std::string checkpoint = record.complete_checkpoint();
    fail(std::string("--benchmark_out: ") + e.what() +
         (checkpoint.empty() ? ": this run's results are lost"
                             : ": this run's results are in the checkpoint '" + checkpoint + "'"));
  }
}

}  // namespace condbench
