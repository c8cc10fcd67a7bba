// condbench: the benchmark runner (docs/design.md §4). Project flags select what to run; Google
// Benchmark's own flags (--benchmark_filter, --benchmark_out, ...) work as usual.
#include <benchmark/benchmark.h>

#include <ATen/Parallel.h>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "analysis.h"
#include "answer_budget.h"
#include "benchmark_case.h"
#include "cli.h"
#include "condbench/error.h"
#include "condbench/nvtx.h"
#include "condbench/output_file.h"
#include "condbench/workload.h"
#include "console_reporter.h"
#include "context.h"
#include "cpu_primitives.h"
#include "device_timing.h"
#include "export_workload.h"
#include "machine_check.h"
#include "registration.h"
#include "run_record.h"
#include "test_slowdown.h"

namespace {

bool has_flag(int argc, char** argv, const char* name) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name, n) == 0 && (argv[i][n] == '=' || argv[i][n] == '\0')) return true;
  return false;
}

// The value of a Google Benchmark flag given as --name=value; `otherwise` when absent.
std::string flag_value(int argc, char** argv, const char* name, const std::string& otherwise) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  return otherwise;
}

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

// Takes every --NAME=VALUE (and a bare --NAME, as an empty value) out of argv, so Google Benchmark
// never sees them, and returns the last value, or nullopt; `given` counts them.
std::optional<std::string> take_flag(int& argc, char** argv, const char* name, int* given = nullptr) {
  const size_t n = std::strlen(name);
  std::optional<std::string> value;
  int count = 0, kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && (argv[i][n] == '=' || argv[i][n] == '\0')) {
      value = argv[i][n] == '=' ? argv[i] + n + 1 : "";
      ++count;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  if (given) *given = count;
  return value;
}

// --benchmark_out=FILE: the run's record, written when the run ends in --benchmark_out_format
// (json unless given), atomically: under a temporary name beside FILE, renamed into place. A Ctrl-C
// removes the temporary (install_signal_cleanup); a failed rename keeps it and says where. condbench
// writes it rather than Google Benchmark, which would write each of --answer-budget's rounds over
// the one before.
class BenchmarkOut {
 public:
  BenchmarkOut(int& argc, char** argv) {
    int given = 0;
    target_ = take_flag(argc, argv, "--benchmark_out", &given);
    format_ = take_flag(argc, argv, "--benchmark_out_format").value_or("json");
    if (format_ != "json" && format_ != "csv" && format_ != "console")
      condbench::fail("--benchmark_out_format: '" + format_ + "' is not json, csv or console");
    // Which of two files was meant is a guess.
    if (given > 1) condbench::fail("--benchmark_out: given twice");
  }
  // The file asked for (nullopt: none), for the output policy's check before anything runs.
  const std::optional<std::string>& target() const { return target_; }
  // After the check: the temporary, created now, so an unwritable place fails before the run.
  void open() {
    if (!target_) return;
    condbench::install_signal_cleanup();
    pending_ = std::make_unique<condbench::PendingFile>(*target_);
    if (!std::ofstream(pending_->temp_path())) condbench::fail("--benchmark_out: cannot write '" + *target_ + "'");
  }
  // A write that fails names the cause and where the results are now: in the checkpoint when it
  // holds them all, else nowhere.
  void write(const condbench::RunRecord& record) {
    if (!pending_) return;
    try {
      pending_->write(record.document(format_));
      pending_->commit();
    } catch (const condbench::Error& e) {
      const std::string checkpoint = record.complete_checkpoint();
      condbench::fail(std::string("--benchmark_out: ") + e.what() +
                      (checkpoint.empty() ? ": this run's results are lost"
                                          : ": this run's results are in the checkpoint '" + checkpoint + "'"));
    }
  }

 private:
  std::optional<std::string> target_;
  std::unique_ptr<condbench::PendingFile> pending_;  // destroyed uncommitted: the temporary goes
  std::string format_;
};

// Google Benchmark's flags, checked before it reads them, so a bad value gets condbench's one line and
// exit code 2 rather than its usage text; an empty value is an error. Its flags of 1.7 take seconds as
// a plain number: "0.5s" is rewritten to 0.5 (kept alive in `rewritten`), "10x" (1.8's iteration
// count) refused.
void check_benchmark_flags(int argc, char** argv, std::deque<std::string>& rewritten) {
  // Google Benchmark reads a format and a time unit as written, a boolean in any case.
  const auto one_of = [](const std::string& flag, const std::string& value, std::initializer_list<const char*> ok,
                         bool any_case = false) {
    std::string lower = value, list;
    if (any_case)
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* o : ok) {
      if (lower == o) return;
      list += (list.empty() ? "" : ", ") + std::string(o);
    }
    condbench::fail(flag + ": '" + condbench::printable(value) + "' is not one of " + list);
  };
  // A number of seconds, > 0 (the minimum time) or >= 0 (the warm-up), as plain text.
  const auto seconds = [](const std::string& flag, std::string value, bool positive) {
    if (!value.empty() && value.back() == 'x')
      condbench::fail(flag + ": '" + condbench::printable(value) +
                      "' is an iteration count, which Google Benchmark 1.7 does not take; give seconds");
    if (!value.empty() && value.back() == 's') value.pop_back();
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(positive ? v > 0 : v >= 0) || !(v <= 86400))
      condbench::fail(flag + ": '" + condbench::printable(value) + "' is not a number of seconds in " +
                      (positive ? "(0" : "[0") + ", 86400]");
    return value;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (eq == std::string::npos) {
      if (flag != "--benchmark_list_tests" && flag != "--benchmark_enable_random_interleaving" &&
          flag != "--benchmark_report_aggregates_only" && flag != "--benchmark_display_aggregates_only" &&
          flag != "--benchmark_counters_tabular")
        condbench::fail(flag + ": needs a value (" + flag + "=...)");
      continue;
    }
    if (value.empty()) condbench::fail(flag + ": needs a value");
    if (flag == "--benchmark_repetitions") {
      condbench::cli::parse_int(flag, value, 1, 100000);
    } else if (flag == "--benchmark_min_time" || flag == "--benchmark_min_warmup_time") {
      const std::string plain = seconds(flag, value, flag == "--benchmark_min_time");
      if (plain != value) argv[i] = rewritten.emplace_back(flag + "=" + plain).data();
    } else if (flag == "--benchmark_format" || flag == "--benchmark_out_format") {
      one_of(flag, value, {"console", "json", "csv"});
    } else if (flag == "--benchmark_time_unit") {
      one_of(flag, value, {"ns", "us", "ms", "s"});
    } else if (flag == "--benchmark_color") {
      one_of(flag, value, {"auto", "true", "false", "yes", "no", "on", "off", "1", "0"}, true);
    } else if (flag == "--benchmark_list_tests" || flag == "--benchmark_enable_random_interleaving" ||
               flag == "--benchmark_report_aggregates_only" || flag == "--benchmark_display_aggregates_only" ||
               flag == "--benchmark_counters_tabular") {
      one_of(flag, value, {"true", "false", "yes", "no", "on", "off", "1", "0"}, true);
    }
  }
}

// A boolean Google Benchmark flag as it reads it: its last occurrence; given without a value, true;
// false for false, no, off and 0 (check_benchmark_flags allows no other value).
bool flag_is_true(int argc, char** argv, const char* name) {
  const size_t n = std::strlen(name);
  bool value = false;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name, n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=')) {
      std::string text = argv[i][n] == '=' ? argv[i] + n + 1 : "true";
      std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
      value = !(text == "false" || text == "no" || text == "off" || text == "0");
    }
  return value;
}

// --benchmark_context=KEY=VALUE[,KEY=VALUE...]: added by condbench, since Google Benchmark adds its
// entries again (and warns) each time its flags are read, which --answer-budget does.
void take_benchmark_context(int& argc, char** argv) {
  const std::optional<std::string> given = take_flag(argc, argv, "--benchmark_context");
  if (!given) return;
  std::istringstream entries(*given);
  for (std::string entry; std::getline(entries, entry, ',');) {
    const size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos) condbench::fail("--benchmark_context: '" + entry + "' is not KEY=VALUE");
    benchmark::AddCustomContext(entry.substr(0, eq), entry.substr(eq + 1));
  }
}

// --trace=FILE: condbench-trace.so, built beside this executable, records every NVTX range and
// writes FILE when the process exits (bench/trace/nvtx_injection.cpp).
void attach_trace(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path library = fs::read_symlink("/proc/self/exe", ec).parent_path() / "condbench-trace.so";
  if (ec || !fs::is_regular_file(library, ec))
    condbench::fail("--trace: condbench-trace.so is not beside this condbench (a build with NVTX makes it)");
  const fs::path target = fs::absolute(file, ec);  // the output policy has checked it (check_outputs)
  try {
    condbench::nvtx::attach_tool(library.string(), {{"CONDBENCH_TRACE_OUT", target.string()}});
  } catch (const condbench::Error& e) {
    condbench::fail(std::string("--trace: ") + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The case kept prepared between benchmark calls goes when main returns, however it returns:
  // before static destruction, which CUDA does not outlive.
  struct ReleasedOnReturn {
    ~ReleasedOnReturn() {
      condbench::release_prepared_case();
      condbench::release_prepared_decoder_case();
    }
  } const release_case;
  try {
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
        condbench::print_flags(std::cout);
        std::cout.flush();
        static char help[] = "--help";
        char* args[] = {argv[0], help, nullptr};
        int count = 2;
        benchmark::Initialize(&count, args);  // prints Google Benchmark's flags and exits 0
        return 0;
      }
    const std::string twins = condbench::register_test_twins();  // before --strategy is read: it may name one
    condbench::RunnerOptions options = condbench::parse_runner_options(argc, argv);
    BenchmarkOut out(argc, argv);
    // Google Benchmark's flags before anything else happens (the trace library, once attached, writes
    // its file at exit): a bad value is one line and exit code 2.
    std::deque<std::string> rewritten;  // flags check_benchmark_flags rewrote; argv points into them
    check_benchmark_flags(argc, argv, rewritten);
    // Every output checked before anything runs (output_file.h): none may destroy what it did not make.
    std::vector<condbench::OutputPath> outputs;
    if (out.target()) outputs.push_back({"--benchmark_out", *out.target()});
    if (!options.checkpoint_out.empty()) outputs.push_back({"--checkpoint-out", options.checkpoint_out});
    if (!options.trace_out.empty()) outputs.push_back({"--trace", options.trace_out});
    if (!options.export_dir.empty()) outputs.push_back({"--export-workload", options.export_dir, true});
    condbench::check_outputs(outputs, {{"--weights", options.weights},
                                       {"--model-file", options.model_file_given},
                                       {"--model-weights", options.model_file_weights},
                                       {"--model-file (its compiled folder)", options.model_file_folder, true}});
    if (options.list) {
      condbench::print_strategies(options, std::cout);
      return 0;
    }
    const bool listing = flag_is_true(argc, argv, "--benchmark_list_tests");
    if (options.export_dir.empty() && !listing) condbench::require_devices_present(options);
    if (!options.export_dir.empty()) {
      const std::vector<condbench::BenchmarkCase> exported = condbench::select_cases(options);
      if (!exported.empty())
        for (const std::string& dir : condbench::export_workloads(exported, options.export_dir))
          std::cout << "wrote " << dir << "\n";
      for (const std::string& dir :
           condbench::export_decoder_workloads(condbench::select_decoder_cases(options), options.export_dir))
        std::cout << "wrote " << dir << "\n";
      return 0;
    }
    if (!options.trace_out.empty()) attach_trace(options.trace_out);
    // Defaults a serious run wants, unless the user chose: 10 repetitions of at least 0.05 s each.
    // The same timed time as 5 x 0.1 s, but a 99% interval of a ratio that calls a 2x difference at
    // cv 25% nine times in ten instead of six, and twice the samples of the variance that arises
    // between repetitions (each repetition prepares its case again: buffers land elsewhere);
    // docs/statistics.md, "Repetitions".
    std::vector<std::string> extra;
    if (!has_flag(argc, argv, "--benchmark_repetitions")) extra.push_back("--benchmark_repetitions=10");
    if (!has_flag(argc, argv, "--benchmark_min_time")) extra.push_back("--benchmark_min_time=0.05");
    // Repetitions of all benchmarks in random order, so a burst of background load spreads over
    // every strategy instead of landing on one (--in-order opts out).
    const bool interleave = !options.in_order && !has_flag(argc, argv, "--benchmark_enable_random_interleaving");
    if (interleave) extra.push_back("--benchmark_enable_random_interleaving=true");
    std::vector<char*> args(argv, argv + argc);
    for (std::string& e : extra) args.push_back(e.data());
    args.push_back(nullptr);
    int args_count = static_cast<int>(args.size()) - 1;

    // Read before Google Benchmark takes its flags out of args: what the table and progress need.
    const std::string format = flag_value(args_count, args.data(), "--benchmark_format", "console");
    const std::string filter = flag_value(args_count, args.data(), "--benchmark_filter", "");
    const std::string repetitions = flag_value(args_count, args.data(), "--benchmark_repetitions", "1");
    const std::string min_time = flag_value(args_count, args.data(), "--benchmark_min_time", "0.5");
    out.open();
    take_benchmark_context(args_count, args.data());
    // Aggregates only: condbench still records every repetition (the report and --answer-budget
    // need them) and shows or writes only the aggregates where asked (run_record.h).
    const bool report_aggregates = flag_is_true(args_count, args.data(), "--benchmark_report_aggregates_only");
    const bool display_aggregates =
        report_aggregates || flag_is_true(args_count, args.data(), "--benchmark_display_aggregates_only");
    take_flag(args_count, args.data(), "--benchmark_report_aggregates_only");
    take_flag(args_count, args.data(), "--benchmark_display_aggregates_only");
    benchmark::Initialize(&args_count, args.data());
    if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 2;

    if (options.threads > 0) at::set_num_threads(options.threads);
    condbench::test_slowdown("");  // a malformed CONDBENCH_TEST_SLOWDOWN is a startup error, not a skipped benchmark
    const bool interleaved = interleave || flag_is_true(argc, argv, "--benchmark_enable_random_interleaving");
    if (options.answer_budget_s > 0) {
      if (!interleaved)
        condbench::fail("--answer-budget: its rounds are interleaved; drop what turns interleaving off");
      if (report_aggregates)
        condbench::fail("--answer-budget: the verdicts need every repetition; drop --benchmark_report_aggregates_only");
      if (format != "console")
        condbench::fail(
            "--answer-budget: the display would show the run before its rounds; keep the console "
            "display and write the result with --benchmark_out");
    }
    benchmark::AddCustomContext("condbench_interleaving", interleaved ? "random" : "in order");
    // "suite", or the flags that selected part of it: scripts/run keeps such a run from replacing
    // a full one as results/latest (scripts/run_history.py).
    std::string selection;
    for (const std::string& flag : options.selecting) selection += (selection.empty() ? "" : ", ") + flag;
    if (!filter.empty()) selection += (selection.empty() ? "" : ", ") + std::string("--benchmark_filter");
    benchmark::AddCustomContext("condbench_selection", selection.empty() ? "suite" : "part: " + selection);
    if (const std::string slowdown = condbench::test_slowdown_setting(); !slowdown.empty())
      benchmark::AddCustomContext("condbench_test_slowdown", slowdown);
    if (!twins.empty()) benchmark::AddCustomContext("condbench_test_twin", twins);
    condbench::nvtx::set_level(options.nvtx);
    for (const auto& [key, value] : condbench::run_context()) benchmark::AddCustomContext(key, value);
    benchmark::AddCustomContext("nvtx", condbench::nvtx::level_name(options.nvtx));
    const bool seeded =
        std::any_of(options.models.begin(), options.models.end(),
                    [](const condbench::ModelSelection& m) { return m.config.family->state_dict() != nullptr; });
    benchmark::AddCustomContext("weights", !options.weights.empty() ? options.weights
                                           : seeded                 ? "seeded"
                                                                    : "the model file's own");
    for (const condbench::ModelSelection& m : options.models)
      for (const auto& [key, value] : m.config.family->provenance()) benchmark::AddCustomContext(key, value);
    // The primitives first: they are the floors the report judges every strategy against, and a run
    // cut short (a time limit on a lent GPU machine) should still have them.
    const auto runs_on = [&](condbench::Device d) {
      return std::find(options.devices.begin(), options.devices.end(), d) != options.devices.end();
    };
    std::vector<std::string> registered;
    if (runs_on(condbench::Device::cpu)) registered = condbench::register_cpu_primitives();
    if (runs_on(condbench::Device::cuda))
      for (std::string& name : condbench::register_cuda_primitives()) registered.push_back(std::move(name));
    const std::vector<condbench::BenchmarkCase> cases = condbench::select_cases(options);
    condbench::register_cases(cases);
    // What was built ahead of the run (AOTInductor packages), once per strategy and model.
    std::set<std::string> noted;
    for (const condbench::BenchmarkCase& c : cases)
      if (const auto note = c.strategy->build_note(c.config, c.strategy->device)) {
        const std::string key = "build:" + c.strategy->key() + " " + c.config.describe();
        if (noted.insert(key).second) benchmark::AddCustomContext(key, *note);
      }
    for (const condbench::BenchmarkCase& c : cases) registered.push_back(c.name());
    const std::vector<condbench::DecoderCase> decoder_cases = condbench::select_decoder_cases(options);
    condbench::register_decoder_cases(decoder_cases);
    for (const condbench::DecoderCase& c : decoder_cases) registered.push_back(c.name());
    for (const condbench::DecoderConfig& c : options.decoders)
      benchmark::AddCustomContext("decoder " + c.describe(), "seeded weights; one iteration is one generated token");

    // Each model's exit scores on condbench's input pool, before anything runs (shared_workload
    // checks them): a model file whose confidence() leaves (0, 1] there is bad input, one line and
    // exit 2, not an error in each of its benchmarks.
    if (!listing) {
      std::set<std::string> checked;
      for (const condbench::BenchmarkCase& c : cases)
        if (!condbench::why_skipped(c) && checked.insert(c.source.key()).second)
          condbench::shared_workload(c.source, 1);
    }
    // Last before the run, so a flag error is never preceded by warnings.
    const bool runs = !listing;
    if (runs)
      for (const auto& [key, value] : condbench::check_machine_before_run(at::get_num_threads(), options.require_quiet))
        benchmark::AddCustomContext(key, value);
    {
      // The whole run in one range: scripts/profile starts and stops Nsight Systems on it.
      static const condbench::nvtx::RegisteredString kAll("benchmarks");
      const condbench::nvtx::ScopedRange all(condbench::nvtx::Level::run, kAll);
      // condbench's own table and progress unless another format is asked for (console_reporter.h)
      std::unique_ptr<condbench::ConsoleReporter> table;
      benchmark::BenchmarkReporter* display = nullptr;
      if (runs && format == "console") {
        const size_t selected = condbench::count_selected(registered, filter);
        const bool progress = options.progress || isatty(STDERR_FILENO);
        if (progress) announce(std::cerr, selected, repetitions, min_time);
        table = std::make_unique<condbench::ConsoleReporter>(
            std::cout, std::cerr, selected * static_cast<size_t>(std::max(1L, std::atol(repetitions.c_str()))),
            progress);
        display = table.get();
      } else {
        display = benchmark::CreateDefaultDisplayReporter();  // Google Benchmark's, which it keeps
      }
      condbench::RunRecord record(*display);
      record.refresh_display_aggregates(table != nullptr);
      record.aggregates_only(display_aggregates, report_aggregates);
      if (!options.checkpoint_out.empty()) record.checkpoint_to(options.checkpoint_out);
      const auto started = std::chrono::steady_clock::now();
      benchmark::RunSpecifiedBenchmarks(&record);
      if (runs && options.answer_budget_s > 0) {
        const condbench::BudgetSpent spent = condbench::spend_answer_budget(
            record, options.answer_budget_s, std::atoi(repetitions.c_str()),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), argv[0]);
        std::cerr << "condbench: answer budget: " << spent.text() << "\n";
        benchmark::AddCustomContext(condbench::report::kAnswerBudgetContext, spent.text());
        if (spent.rounds > 0)
          benchmark::AddCustomContext(condbench::report::kAnswerLooksContext,
                                      std::to_string(condbench::report::kAnswerLooks));
      }
      // What the machine did during the run goes into the files' context, written from the record now.
      if (runs)
        for (const auto& [key, value] : condbench::check_machine_after_run(at::get_num_threads()))
          benchmark::AddCustomContext(key, value);
      record.finish();
      if (runs && record.ran()) out.write(record);  // a filter that matched nothing writes nothing
      if (const auto& why = record.checkpoint_failure()) {
        // Every benchmark ran and --benchmark_out (if given) has them; the file asked for does not.
        std::cerr << "condbench: --checkpoint-out is incomplete: " << *why << "; it holds "
                  << (record.checkpointed() == 0
                          ? std::string("nothing of this run")
                          : "the first " + std::to_string(record.checkpointed()) + " of the run's " +
                                std::to_string(record.repetitions()) + " repetitions")
                  << (out.target() ? ", --benchmark_out all of them" : "") << "\n";
        benchmark::Shutdown();
        return 1;
      }
      if (runs && !record.ran()) {
        // No work done is no success: an exit code that scripts see, and a file of an earlier run
        // under --benchmark_out is not mistaken for this one's.
        std::cerr << "condbench: no benchmark ran: "
                  << (filter.empty() ? std::string("the selection is empty")
                                     : "--benchmark_filter '" + condbench::printable(filter, 120) + "' matches none")
                  << " (--benchmark_list_tests lists them); nothing was written"
                  << (out.target() && std::filesystem::exists(*out.target())
                          ? ", and " + *out.target() + " was left as it was"
                          : std::string())
                  << "\n";
        benchmark::Shutdown();
        return 2;
      }
      if (const auto failed = record.failures(); runs && !failed.empty()) {
        // Work asked for and not done is no success, even when the rest ran: their entries in the
        // result files say why (error_occurred), and the exit code says so to scripts.
        std::cerr << "condbench: " << failed.size() << (failed.size() == 1 ? " benchmark" : " benchmarks")
                  << " failed; the first: " << failed.front().first << ": "
                  << condbench::printable(failed.front().second, 300)
                  << (out.target() ? "; " + *out.target() + " holds the others' results and why these failed" : "")
                  << "\n";
        benchmark::Shutdown();
        return 1;
      }
    }
    benchmark::Shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "condbench: " << condbench::one_line(e) << "\n";
    return condbench::exit_code_for(e);
  } catch (...) {
    std::cerr << "condbench: internal error: an unknown exception\n";
    return 1;
  }
}
