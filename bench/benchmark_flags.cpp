#include "benchmark_flags.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <set>
#include <sstream>

#include "benchmark_filter.h"
#include "cli.h"
#include "condbench/error.h"

namespace condbench {
namespace {

// The flags Google Benchmark reads as booleans: a bare --NAME is true.
bool boolean_flag(const std::string& flag) {
  return flag == "--benchmark_list_tests" || flag == "--benchmark_enable_random_interleaving" ||
         flag == "--benchmark_report_aggregates_only" || flag == "--benchmark_display_aggregates_only" ||
         flag == "--benchmark_counters_tabular";
}

// `value` when it is one of `ok` (in any case where `any_case`), else a one-line error.
void one_of(const std::string& flag, const std::string& value, std::initializer_list<const char*> ok,
            bool any_case = false) {
  std::string lower = value, list;
  if (any_case)
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* o : ok) {
    if (lower == o) return;
    list += (list.empty() ? "" : ", ") + std::string(o);
  }
  fail(flag + ": '" + printable(value) + "' is not one of " + list);
}

// A number of seconds, > 0 (the minimum time) or >= 0 (the warm-up), as Google Benchmark 1.7 reads
// it: "0.5s" becomes "0.5"; "10x" (1.8's iteration count) is refused.
std::string seconds(const std::string& flag, std::string value, bool positive) {
  if (!value.empty() && value.back() == 'x')
    fail(flag + ": '" + printable(value) +
         "' is an iteration count, which Google Benchmark 1.7 does not take; give seconds");
  if (!value.empty() && value.back() == 's') value.pop_back();
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !(positive ? v > 0 : v >= 0) || !(v <= 86400))
    fail(flag + ": '" + printable(value) + "' is not a number of seconds in " + (positive ? "(0" : "[0") + ", 86400]");
  return value;
}

// Google Benchmark 1.7.1's flags (its benchmark.cc), --benchmark_out and its format taken before.
bool google_flag(const std::string& flag) {
  static const std::set<std::string> known = {"--benchmark_list_tests",
                                              "--benchmark_filter",
                                              "--benchmark_min_time",
                                              "--benchmark_min_warmup_time",
                                              "--benchmark_repetitions",
                                              "--benchmark_enable_random_interleaving",
                                              "--benchmark_report_aggregates_only",
                                              "--benchmark_display_aggregates_only",
                                              "--benchmark_format",
                                              "--benchmark_out_format",
                                              "--benchmark_out",
                                              "--benchmark_color",
                                              "--benchmark_counters_tabular",
                                              "--benchmark_perf_counters",
                                              "--benchmark_context",
                                              "--benchmark_time_unit",
                                              "--v"};
  return known.count(flag) > 0;
}

// One --benchmark_ argument checked; returns it as Google Benchmark is to read it.
std::string checked(const std::string& arg) {
  const size_t eq = arg.find('=');
  const std::string flag = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
  if (eq == std::string::npos) {
    if (!boolean_flag(flag)) fail(flag + ": needs a value (" + flag + "=...)");
    return arg;
  }
  if (value.empty()) fail(flag + ": needs a value");
  if (flag == "--benchmark_repetitions") {
    cli::parse_int(flag, value, 1, 100000);
  } else if (flag == "--benchmark_min_time" || flag == "--benchmark_min_warmup_time") {
    return flag + "=" + seconds(flag, value, flag == "--benchmark_min_time");
  } else if (flag == "--benchmark_format" || flag == "--benchmark_out_format") {
    one_of(flag, value, {"console", "json", "csv"});
  } else if (flag == "--benchmark_time_unit") {
    one_of(flag, value, {"ns", "us", "ms", "s"});
  } else if (flag == "--benchmark_color") {
    one_of(flag, value, {"auto", "true", "false", "yes", "no", "on", "off", "1", "0"}, true);
  } else if (boolean_flag(flag)) {
    one_of(flag, value, {"true", "false", "yes", "no", "on", "off", "1", "0"}, true);
  }
  return arg;
}

bool names(const std::string& arg, const std::string& flag) {
  return arg.compare(0, flag.size(), flag) == 0 && (arg.size() == flag.size() || arg[flag.size()] == '=');
}

// The last value given to `flag` (a bare boolean flag: "true"), or nullopt.
std::optional<std::string> last(const std::vector<std::string>& args, const std::string& flag) {
  std::optional<std::string> value;
  for (const std::string& arg : args)
    if (names(arg, flag)) value = arg.size() == flag.size() ? "true" : arg.substr(flag.size() + 1);
  return value;
}

// A boolean as Google Benchmark reads it: false for false, no, off and 0 (checked() allows no other).
bool is_true(const std::vector<std::string>& args, const std::string& flag) {
  std::string text = last(args, flag).value_or("false");
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(text == "false" || text == "no" || text == "off" || text == "0");
}

// Removes every argument naming `flag`.
void drop(std::vector<std::string>& args, const std::string& flag) {
  std::erase_if(args, [&](const std::string& arg) { return names(arg, flag); });
}

}  // namespace

std::optional<std::string> take_flag(int& argc, char** argv, const char* name, int* given) {
  std::optional<std::string> value;
  int count = 0, kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (names(argv[i], name)) {
      value = argv[i][std::strlen(name)] == '=' ? argv[i] + std::strlen(name) + 1 : "";
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

void refuse_unknown_flags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!google_flag(arg.substr(0, arg.find('='))))
      fail(printable(arg) + ": not a flag of condbench or of Google Benchmark (--help lists them)");
  }
}

BenchmarkFlags read_benchmark_flags(int argc, char** argv, bool in_order) {
  refuse_unknown_flags(argc, argv);
  BenchmarkFlags f;
  std::vector<std::string> given;
  std::set<std::string> seen;  // a flag given twice is refused (docs/input.md), Google Benchmark's too
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i], flag = arg.substr(0, arg.find('='));
    if (flag == "--v") cli::parse_int("--v", arg.size() > 4 ? arg.substr(4) : "", 0, 1000);  // the log's verbosity
    given.push_back(flag == "--v" ? arg : checked(arg));
    if (!seen.insert(flag).second) fail(printable(flag) + ": given twice");
  }
  if (const auto context = last(given, "--benchmark_context")) {
    std::istringstream entries(*context);
    for (std::string entry; std::getline(entries, entry, ',');) {
      const size_t eq = entry.find('=');
      if (eq == 0 || eq == std::string::npos) fail("--benchmark_context: '" + printable(entry) + "' is not KEY=VALUE");
      f.context.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  drop(given, "--benchmark_context");
  f.report_aggregates_only = is_true(given, "--benchmark_report_aggregates_only");
  f.display_aggregates_only = f.report_aggregates_only || is_true(given, "--benchmark_display_aggregates_only");
  drop(given, "--benchmark_report_aggregates_only");
  drop(given, "--benchmark_display_aggregates_only");
  // Defaults a serious run wants, unless the user chose: 10 repetitions of at least 0.05 s each.
  // The same timed time as 5 x 0.1 s, but a 99% interval of a ratio that calls a 2x difference at
  // cv 25% nine times in ten instead of six, and twice the samples of the variance that arises
  // between repetitions (each repetition prepares its case again: buffers land elsewhere);
  // docs/statistics.md, "Repetitions".
  if (!last(given, "--benchmark_repetitions")) given.emplace_back("--benchmark_repetitions=10");
  if (!last(given, "--benchmark_min_time")) given.emplace_back("--benchmark_min_time=0.05");
  // Repetitions of all benchmarks in random order, so a burst of background load spreads over
  // every strategy instead of landing on one (--in-order opts out).
  if (!in_order && !last(given, "--benchmark_enable_random_interleaving"))
    given.emplace_back("--benchmark_enable_random_interleaving=true");
  f.interleaved = is_true(given, "--benchmark_enable_random_interleaving");
  f.format = last(given, "--benchmark_format").value_or("console");
  // Google Benchmark reads BENCHMARK_FILTER where no flag is given: condbench counts from it too
  if (const char* env = std::getenv("BENCHMARK_FILTER"); env && *env && !last(given, "--benchmark_filter")) {
    given.push_back(std::string("--benchmark_filter=") + env);
    f.filter_source = "BENCHMARK_FILTER";
  }
  f.filter = last(given, "--benchmark_filter").value_or("");
  if (const auto why = filter_error(f.filter))
    fail(f.filter_source + ": '" + printable(f.filter) + "' is not a regular expression Google Benchmark reads (" +
         *why + ")");
  f.repetitions = *last(given, "--benchmark_repetitions");
  f.min_time = *last(given, "--benchmark_min_time");
  f.list_tests = is_true(given, "--benchmark_list_tests");
  f.args.emplace_back(argc > 0 ? argv[0] : "condbench");
  f.args.insert(f.args.end(), given.begin(), given.end());
  return f;
}

void one_repetition_per_call(char* argv0) {
  static char flag[] = "--benchmark_repetitions=1";
  char* args[] = {argv0, flag, nullptr};
  int count = 2;
  benchmark::Initialize(&count, args);
}

bool BenchmarkFlags::initialize() const {
  // Google Benchmark keeps argv[0] for every context it writes later: these strings live as long as
  // the flags do (main's), and it only reorders the pointers.
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  benchmark::Initialize(&argc, argv.data());
  return !benchmark::ReportUnrecognizedArguments(argc, argv.data());
}

}  // namespace condbench
