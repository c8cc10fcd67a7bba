// condbench-report: turns condbench result files into the answer a user acts on (docs/design.md §5).
//
//   condbench-report --out DIR RESULT.json... [--unstable-cv PCT]   report.md, report.html, charts/ in DIR
//   condbench-report --compare A.json B.json [--min-effect PCT] [--fail-on-regression PCT [--allow-missing]]
//   condbench-report --table RESULT.json...     the median latency table, in Markdown, on stdout
//   condbench-report --explain "A vs B [at SCENARIO] [in TEXT]" RESULT.json...
//                                               the sentence behind a verdict: its medians, intervals,
//                                               ratio, allowance, and what the data could call
//
// Bad input gets one line naming the file and what is wrong, exit code 2, and nothing half
// written: the report is built in a temporary directory beside DIR and renamed into place. DIR is
// replaced only when it is an earlier report (or with --force), and never when it holds an input.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis.h"
#include "charts.h"
#include "condbench/error.h"
#include "condbench/output_file.h"
#include "condbench/result_format.h"
#include "document.h"
#include "pairs.h"
#include "render.h"
#include "result_file.h"
#include "stability.h"

namespace fs = std::filesystem;
using namespace condbench;
using namespace condbench::report;

namespace {

// The largest --fail-on-regression percentage (1000%: eleven times slower). Above it (or infinite) the check
// could never fail.
constexpr double kMaxRegressionPercent = 1000;

const char* const kUsage =
    "usage: condbench-report --out DIR [--force] [--unstable-cv PCT] RESULT.json...\n"
    "       condbench-report --compare A.json B.json [--min-effect PCT] [--fail-on-regression PCT [--allow-missing]]\n"
    "       condbench-report --table RESULT.json...\n"
    "       condbench-report --explain \"A vs B [at SCENARIO] [in TEXT]\" RESULT.json...\n"
    "       condbench-report --undecided [--repetitions N] [--spent R,C,S,L,U] RESULT.json... OWN.json\n"
    "       condbench-report --pairs RESULT.json...  |  --pairs --across A.json B.json\n"
    "  --force             replace DIR even if it is not a previous condbench report\n"
    "  --unstable-cv PCT   mark a benchmark unstable above this coefficient of variation (default 5)\n"
    "  --min-effect PCT    smallest change --compare calls FASTER or SLOWER beyond the drift between\n"
    "                      runs (default 5; docs/statistics.md)\n"
    "  --fail-on-regression PCT  exit 1 when a strategy is SLOWER by more than PCT, or a benchmark of A is\n"
    "                      missing or errored in B (--allow-missing: not those)\n"
    "  --table             print the median latency table of the files (several are read as one, e.g. a run\n"
    "                      and its peer): a row per device, model, batch and scenario, a column per strategy\n"
    "  --undecided         for a run spending an answer budget (the peer's --answer-budget): JSON of the\n"
    "                      cells of the last file that the answer's undecided comparisons need more of;\n"
    "                      --repetitions N (the run's own) adds the rounds before each next look, --spent\n"
    "                      ROUNDS,CELLS,SECONDS,LOOKS,UNDECIDED_AT_START what the budget did, in words\n"
    "  --explain QUERY     the full sentence behind the verdicts of A against B (a strategy as engine/name or\n"
    "                      name), in every group and scenario where both ran, or only at SCENARIO, or in the\n"
    "                      groups whose title holds TEXT (\"cpu · AMD EPYC · mlp h64 ×3 · batch 1\")\n"
    "  --pairs             JSON of the verdict rule's judgement of every two cells of a group, each file on its\n"
    "                      own; with --across, of each benchmark in A against itself in B (two runs): the\n"
    "                      interval, its order statistic, the drift allowance and the verdict, for the\n"
    "                      scripts that measure the rule (docs/statistics.md)\n";

// A percentage flag's value as a fraction.
double percentage(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0) || !(value < 1000))
    fail(flag + ": '" + text + "' is not a percentage");
  return value / 100;
}

// A report directory holds this file; --out replaces only a directory that has it (or, with
// --force, any file or directory), so a mistyped --out can never delete someone's data.
const char* const kMarker = ".condbench-report";

// Refuses an --out that is not a previous report (unless --force), is not a plain file or
// directory, or holds one of the inputs (even with --force).
void check_out(const fs::path& dir, const std::vector<std::string>& inputs, bool force) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  // The output policy (condbench/output_file.h): never replace what is not a plain file or a folder.
  if (const std::string kind = special_file_kind(dir.string()); !kind.empty())
    fail("--out: '" + dir.string() + "' is " + kind + "; it is never replaced, even with --force");
  for (const std::string& input : inputs)
    if (path_inside(input, dir.string()))
      fail("--out: '" + dir.string() + "' holds the input '" + input + "'; choose another path");
  if (!fs::exists(status)) return;
  const bool report = fs::is_directory(status) && fs::exists(dir / kMarker, ec);
  if (report) return;
  if (!force)
    fail("--out: '" + dir.string() + "' exists and is not a condbench report (it has no " + kMarker +
         "); choose another path, or pass --force to replace it");
}

// Builds into DIR.tmp-<pid>, then swaps it in for DIR. If the swap fails, the finished report
// stays in the temporary directory and the error says so.
void write_atomically(const std::vector<ResultFile>& files, const fs::path& dir, double unstable_cv) {
  install_signal_cleanup();
  PendingDirectory tmp(dir.string());
  const fs::path built = tmp.temp_path();
  std::ofstream(built / kMarker) << "condbench-report output; condbench-report --out may replace this directory\n";
  const RenderResult result = write_report(files, built.string(), find_gnuplot(), unstable_cv);
  throw_if_interrupted();
  const fs::path old = dir.string() + ".old-" + std::to_string(::getpid());
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(dir, ec));
  if (replacing) {
    fs::rename(dir, old, ec);
    if (ec) {
      tmp.release();
      fail("--out: cannot move the old '" + dir.string() + "' aside (" + ec.message() + "); the new report is in '" +
           built.string() + "'");
    }
  }
  fs::rename(built, dir, ec);
  if (ec) {
    std::error_code back;
    if (replacing) fs::rename(old, dir, back);
    tmp.release();
    fail("--out: cannot rename the report into '" + dir.string() + "' (" + ec.message() + "); it is kept in '" +
         built.string() + "'");
  }
  tmp.release();
  if (replacing) fs::remove_all(old, ec);
  if (ec) std::cerr << "condbench-report: could not remove the previous report, moved to '" << old.string() << "'\n";
  for (const std::string& note : result.notes) std::cerr << "condbench-report: " << note << "\n";
  if (result.busy)
    std::cerr << "condbench-report: warning: recorded on a busy machine; its cells are marked (see the report's top)\n";
  std::cout << "wrote " << (dir / "report.md").string() << " and " << (dir / "report.html").string() << " ("
            << result.charts << " charts)\n";
}

// condbench-report's command line: the mode, its files and its options, read once.
struct Args {
  std::string out, fail_on, unstable_cv, min_effect;
  std::string repetitions, spent;  // --undecided's, for the peer's answer budget
  std::string explain;             // --explain's query
  bool fail_on_given = false;      // "--fail-on-regression=" is given, and empty: refused, not ignored
  bool allow_missing = false;      // --fail-on-regression passes a benchmark of A missing or errored in B
  bool help = false, compare = false, undecided = false, table = false, force = false, pairs = false, across = false;
  std::vector<std::string> inputs;

  // Any option of the report and --compare modes (the JSON and table modes take result files only).
  bool report_options() const {
    return !out.empty() || fail_on_given || !unstable_cv.empty() || !min_effect.empty() || force;
  }
};

Args read_args(int argc, char** argv) {
  // The options with a value, and the switches, each by the member it sets.
  const std::pair<const char*, std::string Args::*> kValues[] = {{"--out", &Args::out},
                                                                 {"--unstable-cv", &Args::unstable_cv},
                                                                 {"--min-effect", &Args::min_effect},
                                                                 {"--explain", &Args::explain},
                                                                 {"--repetitions", &Args::repetitions},
                                                                 {"--spent", &Args::spent},
                                                                 {"--fail-on-regression", &Args::fail_on}};
  const std::pair<const char*, bool Args::*> kSwitches[] = {
      {"--force", &Args::force},         {"--compare", &Args::compare}, {"--allow-missing", &Args::allow_missing},
      {"--undecided", &Args::undecided}, {"--table", &Args::table},     {"--pairs", &Args::pairs},
      {"--across", &Args::across}};
  const std::vector<std::string> args(argv + 1, argv + argc);
  Args r;
  std::set<std::string> given;  // an option given twice is refused, not the last one taken
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      if (i + 1 >= args.size()) fail(flag + ": needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      r.help = true;
      return r;
    }
    const auto valued = std::find_if(std::begin(kValues), std::end(kValues), [&](const auto& v) {
      return a == v.first || a.rfind(std::string(v.first) + "=", 0) == 0;
    });
    const auto switched =
        std::find_if(std::begin(kSwitches), std::end(kSwitches), [&](const auto& v) { return a == v.first; });
    if ((valued != std::end(kValues) || switched != std::end(kSwitches)) &&
        !given.insert(valued != std::end(kValues) ? valued->first : switched->first).second)
      fail(std::string(valued != std::end(kValues) ? valued->first : switched->first) + ": given twice");
    if (valued != std::end(kValues)) {
      r.*valued->second = value(valued->first);
      // (an empty --fail-on-regression and --explain are refused below, saying more)
      if (r.*valued->second == "" && valued->second != &Args::fail_on && valued->second != &Args::explain)
        fail(std::string(valued->first) + ": needs a value");
      r.fail_on_given |= valued->second == &Args::fail_on;
      if (valued->second == &Args::explain && r.explain.empty())
        fail("--explain: needs a query, \"A vs B [at SCENARIO] [in TEXT]\"");
    } else if (switched != std::end(kSwitches)) {
      r.*switched->second = true;
    } else if (a.rfind("--", 0) == 0) {
      fail("unknown option '" + a + "'");
    } else {
      r.inputs.push_back(a);
    }
  }
  if (r.across && !r.pairs) fail("--across goes with --pairs");
  if (r.allow_missing && !r.fail_on_given) fail("--allow-missing goes with --compare and --fail-on-regression");
  if ((!r.repetitions.empty() || !r.spent.empty()) && !r.undecided)
    fail("--repetitions and --spent go with --undecided");
  return r;
}

std::vector<ResultFile> load_inputs(const Args& args, const std::string& mode) {
  if (args.inputs.empty()) fail(mode + ": no result files given");
  std::vector<ResultFile> files;
  for (const std::string& path : args.inputs) files.push_back(load_result_file(path));
  return files;
}

// --pairs: the verdict rule's judgement of every two cells of a group, as JSON.
int print_pairs(const Args& args) {
  if (args.compare || args.undecided || args.table || args.report_options())
    fail("--pairs takes result files only (and --across)");
  if (args.inputs.empty()) fail("--pairs: no result files given");
  if (args.across && args.inputs.size() != 2) fail("--pairs --across takes exactly two result files");
  const std::vector<ResultFile> files = load_inputs(args, "--pairs");
  write_pairs_json(std::cout, args.across ? pairs_across(files[0], files[1]) : pairs_within(files));
  return 0;
}

// --explain "A vs B [at SCENARIO] [in TEXT]": the verdict's sentence, wherever both ran.
int print_explanations(const Args& args) {
  if (args.compare || args.undecided || args.table || args.pairs || args.report_options())
    fail("--explain takes result files only");
  std::string query = args.explain, within, scenario;
  const auto take = [&](const std::string& word) {
    const size_t at = query.rfind(word);
    if (at == std::string::npos) return std::string();
    std::string tail = query.substr(at + word.size());
    query.erase(at);
    return tail;
  };
  within = take(" in ");
  scenario = take(" at ");
  const size_t vs = query.find(" vs ");
  if (vs == std::string::npos || vs == 0 || vs + 4 >= query.size())
    fail("--explain: '" + printable(args.explain, 120) + "' is not \"A vs B [at SCENARIO] [in TEXT]\"");
  const std::string a = query.substr(0, vs), b = query.substr(vs + 4);
  // "py_cond" names python/py_cond; "torch/masked" names itself
  const auto named = [](const Group& g, const std::string& name) {
    for (const std::string& s : g.strategies)
      if (s == name || (s.size() > name.size() && s.compare(s.size() - name.size(), name.size(), name) == 0 &&
                        s[s.size() - name.size() - 1] == '/'))
        return s;
    return std::string();
  };
  size_t said = 0;
  for (const Group& g : make_groups(load_inputs(args, "--explain"))) {
    const std::string title = g.device_label + " · " + g.model_short() + " · batch " + std::to_string(g.batch);
    if (!within.empty() && title.find(within) == std::string::npos) continue;
    const std::string sa = named(g, a), sb = named(g, b);
    if (sa.empty() || sb.empty()) continue;
    for (const std::string& sc : g.scenarios)
      if ((scenario.empty() || sc == scenario) && g.cell(sa, sc) && g.cell(sb, sc)) {
        std::cout << title << " · " << sc << ": " << explain(g, sa, sb, sc) << ".\n";
        ++said;
      }
  }
  if (said == 0)
    fail("--explain: no group has both " + printable(a, 60) + " and " + printable(b, 60) +
         (scenario.empty() ? "" : " at " + printable(scenario, 40)) +
         (within.empty() ? "" : " in '" + printable(within, 60) + "'"));
  return 0;
}

// --table: the latency table in Markdown.
int print_table(const Args& args) {
  if (args.compare || args.undecided || args.report_options()) fail("--table takes result files only");
  std::cout << latency_table_markdown(load_inputs(args, "--table"));
  return 0;
}

// "3,4,1.5": the numbers of a comma-separated list, each in [0, 1e9], exactly as many as `names` names.
std::vector<double> numbers(const std::string& flag, const std::string& text, const std::string& names, size_t count) {
  const auto refuse = [&] { fail(flag + ": '" + printable(text) + "' is not " + names); };
  std::vector<double> values;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(v >= 0 && v <= 1e9)) refuse();
    values.push_back(v);
  }
  if (values.size() != count || (!text.empty() && text.back() == ',')) refuse();
  return values;
}

// --undecided: the cells an answer budget's next rounds need, as JSON; with --repetitions, the
// budget's schedule (the rounds before each next look); with --spent, what the budget did, in the
// words condbench says it (the peer's answer budget takes both from here).
int print_undecided(const Args& args) {
  if (args.compare || args.report_options()) fail("--undecided takes result files only");
  size_t undecided = 0;
  const std::vector<std::string> cells = cells_for_next_rounds(load_inputs(args, "--undecided"), &undecided);
  nlohmann::json out{{"looks", kAnswerLooks},
                     {"confidence", look_confidence(kAnswerLooks)},
                     {"undecided", undecided},
                     {"cells", cells}};
  if (!args.repetitions.empty()) {
    const double first = numbers("--repetitions", args.repetitions, "a count of repetitions", 1)[0];
    if (first < 1 || first != std::floor(first))
      fail("--repetitions: '" + printable(args.repetitions) + "' is not a count of repetitions");
    out["rounds_before_next_look"] = nlohmann::json::array();
    for (size_t look = 1; look < kAnswerLooks; ++look)
      out["rounds_before_next_look"].push_back(rounds_before_next_look(look, static_cast<size_t>(first)));
  }
  if (!args.spent.empty()) {
    const std::vector<double> v = numbers("--spent", args.spent, "ROUNDS,CELLS,SECONDS,LOOKS,UNDECIDED_AT_START", 5);
    BudgetSpent spent;
    spent.rounds = static_cast<size_t>(v[0]);
    spent.cells = static_cast<size_t>(v[1]);
    spent.seconds = v[2];
    spent.looks = static_cast<size_t>(v[3]);
    spent.undecided_at_start = static_cast<size_t>(v[4]);
    spent.undecided_at_end = undecided;
    out["spent"] = spent.text();
  }
  std::cout << out.dump() << "\n";
  return 0;
}

// --compare A B: the A/B table; exit 1 when --fail-on-regression finds a strategy slower by more.
int print_comparison(const Args& args) {
  if (args.inputs.size() != 2) fail("--compare takes exactly two result files");
  double threshold = -1;
  if (args.fail_on_given) {
    // A percentage a regression can exceed: above 0, at most kMaxRegressionPercent (an infinite or
    // huge one could never fail, which is a check that does nothing).
    char* end = nullptr;
    threshold = args.fail_on.empty() ? std::nan("") : std::strtod(args.fail_on.c_str(), &end);
    if (args.fail_on.empty() || *end != '\0' || !(threshold > 0 && threshold <= kMaxRegressionPercent))
      fail("--fail-on-regression: '" + printable(args.fail_on) + "' is not a percentage above 0 and at most " +
           std::to_string(static_cast<int>(kMaxRegressionPercent)));
  }
  if (!args.unstable_cv.empty()) fail("--unstable-cv goes with --out");
  const double effect = args.min_effect.empty() ? kDefaultMinEffect : percentage("--min-effect", args.min_effect);
  const ResultFile a = load_result_file(args.inputs[0]), b = load_result_file(args.inputs[1]);
  const std::vector<Comparison> rows = compare(a, b, effect);
  if (rows.empty()) fail("no benchmark is in both " + args.inputs[0] + " and " + args.inputs[1]);
  // A file recorded on a busy machine makes every verdict suspect: say so on both channels.
  std::vector<std::string> warnings;
  for (const ResultFile* f : {&a, &b})
    for (const std::string& line : busy_machine_evidence(*f)) warnings.push_back("recorded on a busy machine: " + line);
  for (const std::string& w : warnings) std::cerr << "condbench-report: warning: " << w << "\n";
  std::cout << comparison_markdown(rows, args.inputs[0], args.inputs[1], effect, warnings);
  // What the table cannot hold: benchmarks one file lacks, and B's errors where A has times.
  const Coverage covered = coverage(a, b);
  Document listed;
  for (const auto& [title, names] :
       {std::pair{"Only in A (not run in B)", &covered.only_in_a},
        std::pair{"Errored in B (A has times)", &covered.errored_in_b}, std::pair{"Only in B", &covered.only_in_b}})
    if (!names->empty()) {
      listed.heading(3, std::string(title) + ": " + std::to_string(names->size()));
      listed.bullets(*names);
    }
  std::cout << listed.markdown();
  if (threshold < 0) return 0;
  // The per-strategy verdicts are the headline and what counts; a strategy with too few benchmarks to
  // take together counts by its benchmarks one by one.
  // A strategy that stopped working is a regression too, unless --allow-missing says B ran less on purpose.
  std::string lost;
  if (!args.allow_missing) {
    for (const std::string& name : covered.only_in_a) lost += (lost.empty() ? "" : ", ") + name + " (missing)";
    for (const std::string& name : covered.errored_in_b)
      lost += (lost.empty() ? "" : ", ") + name.substr(0, name.find(": ")) + " (errored)";
  }
  if (!lost.empty())
    std::cerr << "condbench-report: in A, missing or errored in B (--allow-missing passes them): " << lost << "\n";
  std::vector<std::string> regressed;
  for (const StrategyComparison& s : compare_strategies(rows, effect).strategies) {
    const ChangeSummary& verdict = s.decisive();
    if (verdict.verdict == Verdict::slower && 100 * verdict.median_change > threshold) {
      regressed.push_back(s.strategy);
    } else if (verdict.verdict == Verdict::too_few_benchmarks) {
      for (const Comparison& c : rows)
        if (c.strategy == s.strategy && c.verdict == Verdict::slower && 100 * c.change > threshold)
          regressed.push_back(c.name);
    }
  }
  if (regressed.empty()) return lost.empty() ? 0 : 1;
  std::string names;
  for (const std::string& r : regressed) names += (names.empty() ? "" : ", ") + r;
  std::cerr << "condbench-report: slower by more than " << args.fail_on << "% (SLOWER, docs/statistics.md): " << names
            << "\n";
  return 1;
}

// --out DIR: the report, Markdown and HTML, written whole or not at all.
int write_report_folder(const Args& args) {
  if (args.fail_on_given) fail("--fail-on-regression goes with --compare");
  if (!args.min_effect.empty()) fail("--min-effect goes with --compare");
  const double cv = args.unstable_cv.empty() ? kDefaultUnstableCv : percentage("--unstable-cv", args.unstable_cv);
  if (args.out.empty()) fail("--out DIR is required (see --help)");
  if (args.inputs.empty()) fail("no result files given");
  check_out(args.out, args.inputs, args.force);
  std::vector<ResultFile> files;
  for (const std::string& path : args.inputs) files.push_back(load_result_file(path));
  write_atomically(files, args.out, cv);
  return 0;
}

int run(int argc, char** argv) {
  const Args args = read_args(argc, argv);
  if (args.help) {
    std::cout << kUsage;
    return 0;
  }
  if (!args.explain.empty()) return print_explanations(args);
  if (args.pairs) return print_pairs(args);
  if (args.table) return print_table(args);
  if (args.undecided) return print_undecided(args);
  if (args.compare) return print_comparison(args);
  return write_report_folder(args);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Interrupted& e) {
    reraise(e.signal());  // the temporary report is gone; die of the signal
  } catch (const std::exception& e) {
    std::cerr << "condbench-report: " << one_line(e) << "\n";
    return exit_code_for(e);
  } catch (...) {
    std::cerr << "condbench-report: internal error: an unknown exception\n";
    return 1;
  }
}
