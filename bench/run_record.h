#pragma once
// Everything one condbench run reports, kept so that the result files can be written from it: the
// run's own repetitions, and the rounds --answer-budget adds later through further calls of Google
// Benchmark. Google Benchmark calls its reporters once per call (a context, the runs, Finalize);
// the record makes the calls one run: the display sees one context and one Finalize, every
// repetition of a benchmark is numbered on from the ones before, and a benchmark that got more
// repetitions gets its aggregates (mean, median, stddev, cv) again over all of them.
//
// The files are written from the record, by Google Benchmark's own reporter of the format asked for:
// --benchmark_out when the run ends, --checkpoint-out after every benchmark that finishes (a run cut
// short — a time limit on a lent GPU machine, a crash in a later case, Ctrl-C — still leaves a valid
// file of everything that ran).
#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace condbench {

class RunRecord final : public benchmark::BenchmarkReporter {
 public:
  explicit RunRecord(benchmark::BenchmarkReporter& display) : display_(display) {}

  // Rewrites FILE (atomically, as JSON) after every report from now on. A write that fails (a full
  // disk) stops the checkpoints, never the run: one line on stderr, and checkpoint_failure() says why.
  void checkpoint_to(std::string path) { checkpoint_ = std::move(path); }
  // Why the checkpoints stopped (the run's benchmarks are not all in the file), or nullopt; and how
  // many repetitions the last checkpoint written holds.
  const std::optional<std::string>& checkpoint_failure() const { return checkpoint_failure_; }
  size_t checkpointed() const { return checkpointed_; }
  // The checkpoint file when it holds the whole run so far, else "".
  std::string complete_checkpoint() const { return checkpoint_failure_ ? std::string() : checkpoint_; }
  // `refresh`: the display is condbench's table, which reads aggregates; finish() gives it the ones
  // made again over added repetitions.
  void refresh_display_aggregates(bool refresh) { refresh_display_ = refresh; }
  // Google Benchmark's --benchmark_display_aggregates_only and --benchmark_report_aggregates_only: the
  // record keeps every repetition; the display (and with `files`, the documents) show only the
  // aggregates of a benchmark that has them.
  void aggregates_only(bool display, bool files) {
    display_aggregates_only_ = display;
    files_aggregates_only_ = files;
  }
  // From here on every call of Google Benchmark is a round of --answer-budget: its repetitions add to
  // benchmarks that ran before, and the checkpoint is written once per call, not once per benchmark.
  void begin_rounds() { in_rounds_ = true; }
  // Whether Google Benchmark ran anything (a filter that matches nothing never reports a context).
  bool ran() const { return context_.has_value(); }

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;  // the end of one call of Google Benchmark, not of the run: finish()
  // The run's end: the display's Finalize, and the checkpoint once more with the context added since.
  void finish();

  // The run so far as Google Benchmark's reporter of `format` ("json", "csv", "console") writes it.
  std::string document(const std::string& format) const;
  // How many iteration runs have been recorded (every repetition of every benchmark).
  size_t repetitions() const { return repetitions_; }
  // The benchmarks that failed, once each in the order they ran: (name, message) of every run that
  // ended in SkipWithError with anything but "skipped: ..." (what cannot run here is no failure).
  std::vector<std::pair<std::string, std::string>> failures() const;

 private:
  // Benchmarks that got repetitions after Google Benchmark made their aggregates: all their iteration runs.
  std::map<std::string, std::vector<const Run*>> extended() const;
  std::vector<Run> with_current_aggregates() const;
  void write_checkpoint() const;

  benchmark::BenchmarkReporter& display_;
  std::optional<Context> context_;
  std::vector<Run> runs_;
  std::map<std::string, int64_t> seen_;  // run name -> iteration runs so far
  size_t repetitions_ = 0;
  std::string checkpoint_;
  bool refresh_display_ = false, display_aggregates_only_ = false, files_aggregates_only_ = false;
  bool in_rounds_ = false;
  mutable std::optional<std::string> checkpoint_failure_;  // set by the const writer, once
  mutable size_t checkpointed_ = 0;                        // repetitions in the last checkpoint written
};

}  // namespace condbench
