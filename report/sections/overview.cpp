// The run at a glance: what was compared (the files and their machines), what each strategy does,
// the recommendations, the fastest strategy per cell, and what did not run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "condbench/result_format.h"
#include "section.h"

namespace condbench::report {

namespace {

// The machine's load as the run recorded it: load averages at the start and the end, on N CPUs.
std::string load_text(const ResultFile& f) {
  auto get = [&](const char* key) { return f.said(key); };
  const std::string cpus = get("num_cpus"), start = get("condbench_loadavg_start"), end = get("condbench_loadavg_end");
  std::string text;
  if (!start.empty()) text = "start " + start + (end.empty() ? "" : ", end " + end);
  double l1 = 0, l5 = 0, l15 = 0;  // older files: Google Benchmark's "[l1,l5,l15]" only
  if (text.empty() && std::sscanf(get("load_avg").c_str(), "[%lf,%lf,%lf]", &l1, &l5, &l15) == 3) {
    char loads[64];
    std::snprintf(loads, sizeof loads, "%.2f %.2f %.2f", l1, l5, l15);
    text = std::string("start ") + loads;
  }
  if (text.empty()) return "-";
  return text + (cpus.empty() ? "" : " on " + cpus + " CPUs");
}

// What the GPU's figures depend on, as the run recorded it: "132 SMs, SM clock 1980 of 1980 MHz,
// persistence on, TF32 off"; "-" for a file without it (a CPU run, or one older than the record).
std::string gpu_state(const ResultFile& f) {
  auto get = [&](const char* key) { return f.said(key); };
  if (get("gpu_sm_count").empty()) return "-";
  std::string text = get("gpu_sm_count") + " SMs, SM clock " + get("gpu_sm_clock_mhz") + " of " +
                     get("gpu_sm_clock_peak_mhz") + " MHz, persistence " + get("gpu_persistence_mode");
  if (!get("torch_tf32_cublas").empty()) text += ", TF32 " + get("torch_tf32_cublas");
  return text;
}

void what_was_compared(const ReportInput& in, Charts& /*out*/, Document& doc) {
  Table runs{
      {"file", "GPU", "GPU state", "CPU", "threads", "torch", "CUDA runtime", "driver", "date", "revision", "load"},
      {}};
  for (const ResultFile& f : in.files) {
    auto get = [&](const char* key) { return f.said(key, "-"); };
    // A CUDA version is the GPU's to claim: without one, the CUDA runtime LibTorch ships means nothing.
    const bool gpu = get("device_name") != "none" && get("device_name") != "-";
    runs.rows.push_back({std::filesystem::path(f.path).filename().string(), get("device_name"), gpu_state(f),
                         get("cpu_model"), get("threads"), get("torch_version"),
                         gpu ? get("cuda_runtime_version") : "-", gpu ? get("cuda_driver_version") : "-", get("date"),
                         get("git_revision"), load_text(f)});
  }
  doc.table(runs);
}

// The strategies this report shows, each with what it does, as the files describe them
// (strategy_context_key: "strategy:<device>/<engine>/<name>", "... per token" for the decoder's, which
// schema 1 files keyed "decoder strategy:..."; a file too old to say, says so).
void strategy_glossary(const ReportInput& in, Charts& /*out*/, Document& doc) {
  std::map<std::string, std::string> glossary;  // device/engine/name -> summary
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series) {
      if (s.primitive || !s.error.empty()) continue;  // a skipped benchmark shows nothing to explain
      // A decoder's strategies are others of the same names (docs/design.md §8), described apart,
      // labelled with the family: "cpu/torch/masked (decoder)".
      const std::string family = model_family(s.model);
      const bool per_token = f.per_token(family);
      const std::string key = s.device + "/" + s.strategy_key();
      auto said = f.context.find(strategy_context_key(key, per_token ? TimedUnit::token : TimedUnit::inference));
      if (said == f.context.end() && per_token) said = f.context.find(kSchema1TokenStrategyContext + key);
      std::string& summary = glossary[per_token ? key + " (" + family + ")" : key];
      if (said != f.context.end() && (summary.empty() || summary[0] == '('))
        summary = said->second;
      else if (summary.empty())
        summary = "(not in the result file: a condbench older than its glossary)";
    }
  Table t{{"strategy", "device", "what it does"}, {}};
  for (const auto& [key, summary] : glossary) {
    const size_t slash = key.find('/');
    t.rows.push_back({key.substr(slash + 1), key.substr(0, slash), summary});
  }
  doc.table(t);
  // What was built ahead of the run (AOTInductor packages): "build:<strategy> <model>" -> how.
  std::set<std::string> built;
  for (const ResultFile& f : in.files)
    for (const auto& [key, value] : f.context)
      if (key.rfind("build:", 0) == 0) built.insert(key.substr(6) + ": " + value);
  if (!built.empty()) {
    doc.paragraph("Built ahead of the run, outside the timed region:");
    doc.bullets(std::vector<std::string>(built.begin(), built.end()));
  }
}

// Per machine, a row per group and end of the question (most rows leaving early, most late): the
// fastest strategy and its verdict against eager_host (or the runner-up).
void recommendations_section(const ReportInput& in, Charts& /*out*/, Document& doc) {
  const std::vector<Recommendation> all = recommendations(in.groups);
  if (all.empty()) {
    doc.paragraph("No group has two strategies to compare.");
    return;
  }
  doc.paragraph("The fastest strategy at each end of each group against " + std::string(kEagerHost) +
                " (or, where that is the fastest or did not run, the runner-up).");
  std::string machine;
  Table t{{"model · batch", "scenario", "fastest", "against", "verdict"}, {}};
  for (const Recommendation& r : all) {
    if (r.group->device_label != machine) {
      if (!t.rows.empty()) doc.table(t);
      t.rows.clear();
      t.notes.clear();
      machine_heading(doc, 3, *r.group, machine);
    }
    const Group& g = *r.group;
    const std::string marks =
        marks_text(r.judgement, *g.cell(r.best, r.scenario), *g.cell(r.other, r.scenario), r.best, r.other);
    t.rows.push_back(
        {group_heading(g), r.scenario, r.best, r.other, status_text(r.judgement) + (marks.empty() ? "" : " " + marks)});
    t.notes.push_back({"", "", "", "", explain(g, r.best, r.other, r.scenario)});
  }
  doc.table(t);
}

// Per machine, one table: a row per model and batch, a column per scenario, each cell the fastest
// strategy and its margin over the runner-up (what the rule could not separate from it behind "?",
// what it calls the same behind "="); the runner-up and the rest in the HTML's title.
void best_strategy(const ReportInput& in, Charts& /*out*/, Document& doc) {
  doc.paragraph(
      "The fastest strategy of each scenario and its margin over the runner-up, the conservative factor "
      "(\"≥N×\"); \"?\" where the rule cannot separate it from the runner-up, \"= X\" where it calls X the same.");
  const std::vector<Winner> winners = best_strategies(in.groups);
  std::string machine;
  std::vector<std::string> scenarios;  // of the machine's groups, in order of depth
  Table t;
  const auto flush = [&] {
    if (!t.rows.empty()) doc.table(t);
    t = Table{};
  };
  for (size_t gi = 0; gi < in.groups.size(); ++gi) {
    const Group& g = in.groups[gi];
    if (g.device_label != machine) {
      flush();
      machine_heading(doc, 3, g, machine);
      std::set<std::string> seen;
      for (const Group& other : in.groups)
        if (other.device_label == machine) seen.insert(other.scenarios.begin(), other.scenarios.end());
      scenarios.assign(seen.begin(), seen.end());
      std::sort(scenarios.begin(), scenarios.end(),
                [](const std::string& a, const std::string& b) { return scenario_rank(a) < scenario_rank(b); });
      t.header = {"model · batch"};
      t.header.insert(t.header.end(), scenarios.begin(), scenarios.end());
    }
    std::vector<std::string> row{group_heading(g)}, notes{""};
    for (const std::string& sc : scenarios) {
      const auto w = std::find_if(winners.begin(), winners.end(), [&](const Winner& x) {
        return x.device_label == g.device_label && x.batch == g.batch && x.model == g.model && x.scenario == sc;
      });
      if (w == winners.end()) {
        row.push_back("-");
        notes.push_back("");
        continue;
      }
      std::string cell = w->strategy;
      if (!w->same.empty())
        cell.append(" = ").append(w->same.front());
      else if (w->margin > 0)
        cell.append(" ≥").append(format_at_least(w->margin));
      else if (!w->runner_up.empty())
        cell.append(" ?");
      row.push_back(cell);
      std::string note = w->runner_up.empty() ? "ran alone" : "runner-up " + w->runner_up;
      for (const std::string& a : w->ambiguous) note += "; not separated from " + a;
      for (const std::string& x : w->same) note += "; the same as " + x;
      notes.push_back(note);
    }
    t.rows.push_back(std::move(row));
    t.notes.push_back(std::move(notes));
  }
  flush();
}

void skipped_benchmarks(const ReportInput& in, Charts& /*out*/, Document& doc) {
  size_t count = 0;
  std::string first;
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series)
      if (!s.error.empty() && count++ == 0) first = s.name + ": " + s.error;
  doc.paragraph(std::to_string(count) + " benchmarks did not run (for example: " + first + ").");
}

bool any_skipped(const ReportInput& in) {
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series)
      if (!s.error.empty()) return true;
  return false;
}

}  // namespace

CONDBENCH_REPORT_SECTION(compared, "What was compared", 20, nullptr, what_was_compared);
CONDBENCH_REPORT_SECTION(strategies, "Strategies", 30, nullptr, strategy_glossary);
CONDBENCH_REPORT_SECTION(recommendations, "Recommendations", 40, nullptr, recommendations_section);
CONDBENCH_REPORT_SECTION(best, "Best strategy", 50, nullptr, best_strategy);
CONDBENCH_REPORT_SECTION(skipped, "Skipped", 90, any_skipped, skipped_benchmarks);

}  // namespace condbench::report
