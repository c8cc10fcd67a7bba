// condbench-report: turns condbench result files into the answer a user acts on (DESIGN §5).
//
//   condbench-report --out DIR RESULT.json... [--unstable-cv PCT]   report.md, report.html, charts/ in DIR
//   condbench-report --compare A.json B.json [--min-effect PCT] [--fail-on-regression PCT]
//
// Bad input gets one line naming the file and what is wrong, exit code 2, and nothing half
// written: the report is built in a temporary directory beside DIR and renamed into place.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "analysis.h"
#include "condbench/error.h"
#include "render.h"
#include "result_file.h"
#include "stability.h"

namespace fs = std::filesystem;
using namespace condbench;
using namespace condbench::report;

namespace {

const char* const kUsage =
    "usage: condbench-report --out DIR RESULT.json... [--unstable-cv PCT]\n"
    "       condbench-report --compare A.json B.json [--min-effect PCT] [--fail-on-regression PCT]\n"
    "  --unstable-cv PCT   mark a benchmark unstable above this coefficient of variation (default 5)\n"
    "  --min-effect PCT    smallest change --compare calls FASTER or SLOWER (default 5)\n";

// A percentage flag's value as a fraction.
double percentage(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0) || !(value < 1000))
    fail(flag + ": '" + text + "' is not a percentage");
  return value / 100;
}

// Builds into DIR.tmp-<pid>, then swaps it in for DIR.
void write_atomically(const std::vector<ResultFile>& files, const fs::path& dir, double unstable_cv) {
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  const fs::path old = dir.string() + ".old-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    const RenderResult result = write_report(files, tmp.string(), find_gnuplot(), unstable_cv);
    if (fs::exists(dir)) fs::rename(dir, old);
    fs::rename(tmp, dir);
    fs::remove_all(old);
    for (const std::string& note : result.notes) std::cerr << "condbench-report: " << note << "\n";
    if (result.disturbed)
      std::cerr
          << "condbench-report: warning: the run was disturbed; the report gives no recommendations (see its top)\n";
    std::cout << "wrote " << (dir / "report.md").string() << " and " << (dir / "report.html").string() << " ("
              << result.charts << " charts)\n";
  } catch (...) {
    fs::remove_all(tmp);
    throw;
  }
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string out, fail_on, unstable_cv, min_effect;
  bool compare_mode = false;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      if (i + 1 >= args.size()) fail(flag + ": needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--out" || a.rfind("--out=", 0) == 0) {
      out = value("--out");
    } else if (a == "--unstable-cv" || a.rfind("--unstable-cv=", 0) == 0) {
      unstable_cv = value("--unstable-cv");
    } else if (a == "--min-effect" || a.rfind("--min-effect=", 0) == 0) {
      min_effect = value("--min-effect");
    } else if (a == "--compare") {
      compare_mode = true;
    } else if (a == "--fail-on-regression" || a.rfind("--fail-on-regression=", 0) == 0) {
      fail_on = value("--fail-on-regression");
    } else if (a.rfind("--", 0) == 0) {
      fail("unknown option '" + a + "'");
    } else {
      inputs.push_back(a);
    }
  }
  if (compare_mode) {
    if (inputs.size() != 2) fail("--compare takes exactly two result files");
    double threshold = -1;
    if (!fail_on.empty()) {
      char* end = nullptr;
      threshold = std::strtod(fail_on.c_str(), &end);
      if (*end != '\0' || !(threshold >= 0)) fail("--fail-on-regression: '" + fail_on + "' is not a percentage");
    }
    if (!unstable_cv.empty()) fail("--unstable-cv goes with --out");
    const double effect = min_effect.empty() ? kDefaultMinEffect : percentage("--min-effect", min_effect);
    const ResultFile a = load_result_file(inputs[0]), b = load_result_file(inputs[1]);
    const std::vector<Comparison> rows = compare(a, b, effect);
    if (rows.empty()) fail("no benchmark is in both " + inputs[0] + " and " + inputs[1]);
    // A file recorded on a busy machine makes every verdict suspect: say so on both channels.
    std::vector<std::string> warnings;
    for (const ResultFile* f : {&a, &b})
      for (const std::string& line : busy_machine_evidence(*f))
        warnings.push_back("recorded on a busy machine: " + line);
    for (const std::string& w : warnings) std::cerr << "condbench-report: warning: " << w << "\n";
    std::cout << comparison_markdown(rows, inputs[0], inputs[1], effect, warnings);
    int regressions = 0;
    for (const Comparison& c : rows)
      if (threshold >= 0 && c.verdict == Verdict::slower && 100 * c.change > threshold) ++regressions;
    if (regressions > 0) {
      std::cerr << "condbench-report: " << regressions << " benchmarks slowed by more than " << fail_on
                << "% with significance\n";
      return 1;
    }
    return 0;
  }
  if (!fail_on.empty()) fail("--fail-on-regression goes with --compare");
  if (!min_effect.empty()) fail("--min-effect goes with --compare");
  const double cv = unstable_cv.empty() ? kDefaultUnstableCv : percentage("--unstable-cv", unstable_cv);
  if (out.empty()) fail("--out DIR is required (see --help)");
  if (inputs.empty()) fail("no result files given");
  std::vector<ResultFile> files;
  for (const std::string& path : inputs) files.push_back(load_result_file(path));
  write_atomically(files, out, cv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::cerr << "condbench-report: " << what.substr(0, what.find('\n')) << "\n";
    return 2;
  }
}
