#include "runner.h"

#include <benchmark/benchmark.h>

#include <ATen/Parallel.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "analysis.h"
#include "answer_budget.h"
#include "benchmark_case.h"
#include "benchmark_filter.h"
#include "condbench/error.h"
#include "condbench/nvtx.h"
#include "condbench/workload.h"
#include "console_reporter.h"
#include "context.h"
#include "cpu_primitives.h"
#include "device_timing.h"
#include "export_workload.h"
#include "kernel_trace.h"
#include "lockstep.h"
#include "machine_check.h"
#include "run_record.h"
#include "test_slowdown.h"

namespace condbench {
namespace {

// --benchmark_format=csv's display. Google Benchmark's CSV reporter prints its header from the
// first runs it is given and aborts on a counter it did not print there (a strategy's, after a
// primitive's); given every run once, at the end, its header holds them all.
class CsvDisplay final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& context) override { return csv_.ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override { runs_.insert(runs_.end(), runs.begin(), runs.end()); }
  void Finalize() override {
    if (!runs_.empty()) csv_.ReportRuns(runs_);
    csv_.Finalize();
  }

 private:
  benchmark::BenchmarkReporter& csv_ = *benchmark::CreateDefaultDisplayReporter();  // Google Benchmark keeps it
  std::vector<Run> runs_;
};

// Before a run that shows progress: how many repetitions of how many benchmarks, and the least
// time they take (each repetition runs for at least --benchmark_min_time; setup comes on top).
void announce(std::ostream& out, size_t benchmarks, const std::string& repetitions, const std::string& min_time) {
  char* end = nullptr;
  const double reps = std::strtod(repetitions.c_str(), &end);
  const double seconds = std::strtod(min_time.c_str(), &end);
  out << "condbench: " << benchmarks << (benchmarks == 1 ? " benchmark" : " benchmarks") << " x " << repetitions
      << (repetitions == "1" ? " repetition" : " repetitions");
  if (reps > 0 && seconds > 0 && (*end == '\0' || *end == 's')) {
    const long least = std::lround(static_cast<double>(benchmarks) * reps * seconds);
    out << " of at least " << min_time << (*end == 's' ? "" : " s") << " each: at least ";
    if (least >= 60) out << least / 60 << " min ";
    out << least % 60 << " s";
  }
  out << "\n";
}

bool runs_on(const RunnerOptions& options, Device device) {
  return std::find(options.devices.begin(), options.devices.end(), device) != options.devices.end();
}

// No work done is no success: an exit code that scripts see, and a file of an earlier run under
// --benchmark_out is not mistaken for this one's.
int nothing_ran(const BenchmarkOut& out, const BenchmarkFlags& flags) {
  std::cerr << "condbench: no benchmark ran: "
            << (flags.filter.empty() ? std::string("the selection is empty")
                                     : flags.filter_source + " '" + printable(flags.filter, 120) + "' matches none")
            << " (--benchmark_list_tests lists them); nothing was written"
            << (out.target() && std::filesystem::exists(*out.target())
                    ? ", and " + *out.target() + " was left as it was"
                    : std::string())
            << "\n";
  return 2;
}

// The end of a run that ran: what the files and the exit code say of it.
int conclude(const RunRecord& record, const BenchmarkOut& out, const BenchmarkFlags& flags) {
  if (const auto& why = record.checkpoint_failure()) {
    // Every benchmark ran and --benchmark_out (if given) has them; the file asked for does not.
    std::cerr << "condbench: --checkpoint-out is incomplete: " << *why << "; it holds "
              << (record.checkpointed() == 0 ? std::string("nothing of this run")
                                             : "the first " + std::to_string(record.checkpointed()) + " of the run's " +
                                                   std::to_string(record.repetitions()) + " repetitions")
              << (out.target() ? ", --benchmark_out all of them" : "") << "\n";
    return 1;
  }
  if (!record.ran()) return nothing_ran(out, flags);
  if (const auto failed = record.failures(); !failed.empty()) {
    // Work asked for and not done is no success, even when the rest ran: their entries in the
    // result files say why (error_occurred), and the exit code says so to scripts.
    std::cerr << "condbench: " << failed.size() << (failed.size() == 1 ? " benchmark" : " benchmarks")
              << " failed; the first: " << failed.front().first << ": " << printable(failed.front().second, 300)
              << (out.target() ? "; " + *out.target() + " holds the others' results and why these failed" : "") << "\n";
    return 1;
  }
  return 0;
}

// --trace=FILE: condbench-trace.so, built beside this executable, records every NVTX range and
// writes FILE when the process exits (bench/trace/nvtx_injection.cpp).
void attach_trace(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path library = fs::read_symlink("/proc/self/exe", ec).parent_path() / "condbench-trace.so";
  if (ec || !fs::is_regular_file(library, ec))
    fail("--trace: condbench-trace.so is not beside this condbench (a build with NVTX makes it)");
  const fs::path target = fs::absolute(file, ec);  // the output policy has checked it (check_outputs)
  try {
    nvtx::attach_tool(library.string(), {{"CONDBENCH_TRACE_OUT", target.string()}});
  } catch (const Error& e) {
    fail(std::string("--trace: ") + e.what());
  }
}

// --rounds: the run's repetitions, one round a call of Google Benchmark, each round's order random and
// its end checkpointed. Each repetition says its round (the "round" counter, benchmark_case.h).
void run_rounds(RunRecord& record, const BenchmarkFlags& flags, char* argv0) {
  const long rounds = std::max(1L, std::atol(flags.repetitions.c_str()));
  one_repetition_per_call(argv0);
  record.begin_rounds();
  for (long round = 0; round < rounds; ++round) {
    if (Lockstep* turns = lockstep()) turns->round_turn(round);
    set_round(round);
    const size_t before = record.repetitions();
    benchmark::RunSpecifiedBenchmarks(&record);
    if (!record.ran() || record.repetitions() == before) break;  // nothing selected, or every case failed
  }
  set_round(-1);
}

// Refuses flags that cannot go with --answer-budget or --rounds.
void check_answer_budget(const RunnerOptions& options, const BenchmarkFlags& flags) {
  if (options.rounds && !flags.interleaved)
    fail("--rounds: its rounds are in random order; drop what turns interleaving off");
  if (options.answer_budget_s <= 0) return;
  if (!flags.interleaved) fail("--answer-budget: its rounds are interleaved; drop what turns interleaving off");
  if (flags.report_aggregates_only)
    fail("--answer-budget: the verdicts need every repetition; drop --benchmark_report_aggregates_only");
  if (flags.format != "console")
    fail(
        "--answer-budget: the display would show the run before its rounds; keep the console display and write "
        "the result with --benchmark_out");
}

}  // namespace

int print_help(char* argv0) {
  print_flags(std::cout);
  std::cout.flush();
  static char help[] = "--help";
  char* args[] = {argv0, help, nullptr};
  int count = 2;
  benchmark::Initialize(&count, args);  // prints Google Benchmark's flags and exits 0
  return 0;
}

int export_workloads(const RunnerOptions& options) {
  std::vector<ExportedModel> models = exported_models(select_cases(options));
  for (const auto& token_models : options.token_models)
    for (ExportedModel& model : token_models->exported(options)) models.push_back(std::move(model));
  for (const std::string& dir : export_models(models, options.export_dir)) std::cout << "wrote " << dir << "\n";
  return 0;
}

bool start_run(const RunnerOptions& options, const BenchmarkFlags& flags, BenchmarkOut& out, const std::string& twins) {
  if (!flags.list_tests) require_devices_present(options);
  if (!options.trace_out.empty()) attach_trace(options.trace_out);
  out.open();
  if (!flags.initialize()) return false;
  if (options.threads > 0) at::set_num_threads(options.threads);
  test_slowdown("");  // a malformed CONDBENCH_TEST_SLOWDOWN is a startup error, not a skipped benchmark
  lockstep();         // and a malformed CONDBENCH_LOCKSTEP
  check_answer_budget(options, flags);
  nvtx::set_level(options.nvtx);
  for (const auto& [key, value] : runner_context(options, flags, test_slowdown_setting(), twins))
    benchmark::AddCustomContext(key, value);
  return true;
}

std::vector<std::string> register_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags) {
  // The primitives first: they are the floors the report judges every strategy against, and a run
  // cut short (a time limit on a lent GPU machine) should still have them.
  std::vector<std::string> registered;
  if (runs_on(options, Device::cpu)) registered = register_cpu_primitives();
  if (runs_on(options, Device::cuda))
    for (std::string& name : register_cuda_primitives()) registered.push_back(std::move(name));
  const std::vector<BenchmarkCase> cases = select_cases(options);
  register_cases(cases);
  // What was built ahead of the run (AOTInductor packages), once per strategy and model.
  std::set<std::string> noted;
  for (const BenchmarkCase& c : cases)
    if (const auto note = c.strategy->build_note(c.config, c.strategy->device)) {
      const std::string key = "build:" + c.strategy->key() + " " + c.config.describe();
      if (noted.insert(key).second) benchmark::AddCustomContext(key, *note);
    }
  for (const BenchmarkCase& c : cases) registered.push_back(c.name());
  for (const auto& models : options.token_models)
    for (std::string& name : models->register_cases(options)) registered.push_back(std::move(name));
  // Each model's exit scores on condbench's input pool, before anything runs (shared_workload
  // checks them): a model file whose confidence() leaves (0, 1] there is bad input, one line and
  // exit 2, not an error in each of its benchmarks.
  if (!flags.list_tests) {
    // Skipped is no failure (docs/running.md), but a run whose every case is skipped should say so
    // before its primitives take their time, not only in the skip lines at the end.
    // (A device this machine lacks was refused before: require_devices_present.)
    size_t selected = cases.size();
    for (const auto& models : options.token_models) selected += models->case_names(options).size();
    if (const std::vector<UnsupportedCase> skipped = unsupported_cases(options);
        selected > 0 && skipped.size() == selected)
      std::cerr << "condbench: every case the flags select will be skipped (" << skipped.front().strategy << ": "
                << skipped.front().why << "); --list says what runs here\n";
    std::set<std::string> checked;
    for (const BenchmarkCase& c : cases)
      if (!why_skipped(c) && checked.insert(c.source.key()).second) shared_workload(c.source, 1);
    if (!options.model_file_used.empty()) std::cerr << "condbench: " << options.model_file_used << "\n";
  }
  return registered;
}

int run_benchmarks(const RunnerOptions& options, const BenchmarkFlags& flags, BenchmarkOut& out,
                   const std::vector<std::string>& registered, char* argv0) {
  const bool runs = !flags.list_tests;
  // In lockstep the machine is checked in this process's first turn, when the other is idle (its
  // startup, a compile say, is a turn of its own); that turn is the run's first round.
  if (Lockstep* turns = runs ? lockstep() : nullptr) turns->wait_turn();
  // A selection of nothing ends here, before the machine is checked and in condbench's words only.
  const size_t selected = count_selected(registered, flags.filter);
  if (runs && selected == 0) return nothing_ran(out, flags);
  // Last before the run, so a flag error is never preceded by warnings.
  if (runs)
    for (const auto& [key, value] :
         check_machine_before_run(at::get_num_threads(), options.require_quiet, options.wait_quiet_s))
      benchmark::AddCustomContext(key, value);
  // The whole run in one range: scripts/profile starts and stops Nsight Systems on it.
  static const nvtx::RegisteredString kAll("benchmarks");
  const nvtx::ScopedRange all(nvtx::Level::run, kAll);
  // condbench's own table and progress unless another format is asked for (console_reporter.h)
  std::unique_ptr<ConsoleReporter> table;
  std::optional<CsvDisplay> csv;
  benchmark::BenchmarkReporter* display = nullptr;
  if (runs && flags.format == "console") {
    using Progress = ConsoleReporter::Progress;
    const Progress progress = isatty(STDERR_FILENO) ? Progress::redrawn
                              : options.progress    ? Progress::lines
                                                    : Progress::none;
    if (progress != Progress::none) announce(std::cerr, selected, flags.repetitions, flags.min_time);
    table = std::make_unique<ConsoleReporter>(
        std::cout, std::cerr, selected * static_cast<size_t>(std::max(1L, std::atol(flags.repetitions.c_str()))),
        progress);
    display = table.get();
  } else if (flags.format == "csv") {
    display = &csv.emplace();
  } else {
    display = benchmark::CreateDefaultDisplayReporter();  // Google Benchmark's, which it keeps
  }
  RunRecord record(*display);
  record.refresh_display_aggregates(table || csv);  // the displays that print once, at the end
  record.aggregates_only(flags.display_aggregates_only, flags.report_aggregates_only);
  if (!options.checkpoint_out.empty()) record.checkpoint_to(options.checkpoint_out);
  const auto started = std::chrono::steady_clock::now();
  std::optional<KernelTrace> kernels;
  if (runs && !options.kernel_trace_out.empty())
    kernels.emplace(options.kernel_trace_out, runs_on(options, Device::cuda));
  if (runs && options.rounds) {
    run_rounds(record, flags, argv0);
  } else {
    benchmark::RunSpecifiedBenchmarks(&record);  // in lockstep, the whole run one turn: the one taken above
  }
  if (runs && options.answer_budget_s > 0) {
    const BudgetSpent spent =
        spend_answer_budget(record, options.answer_budget_s, std::atoi(flags.repetitions.c_str()),
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), argv0);
    std::cerr << "condbench: answer budget: " << spent.text() << "\n";
    benchmark::AddCustomContext(report::kAnswerBudgetContext, spent.text());
    if (spent.rounds > 0)
      benchmark::AddCustomContext(report::kAnswerLooksContext, std::to_string(report::kAnswerLooks));
  }
  if (kernels) kernels->finish();
  // What the machine did during the run goes into the files' context, written from the record now.
  if (runs)
    for (const auto& [key, value] : check_machine_after_run(at::get_num_threads()))
      benchmark::AddCustomContext(key, value);
  record.finish();
  if (!runs) return 0;
  // the console's last line (stderr beside a JSON display): what the run held at its peak
  (table ? std::cout : std::cerr) << "condbench: peak resident memory " << peak_resident_memory() << "\n";
  if (record.ran()) out.write(record);  // a filter that matched nothing writes nothing
  return conclude(record, out, flags);
}

}  // namespace condbench
