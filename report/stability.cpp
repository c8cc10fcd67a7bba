#include "stability.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "condbench/machine_state.h"

namespace condbench::report {

namespace {

std::string get(const ResultFile& file, const std::string& key) {
  auto it = file.context.find(key);
  return it == file.context.end() ? std::string() : it->second;
}

std::string name_of(const ResultFile& file) { return std::filesystem::path(file.path).filename().string(); }

std::string format(double value, const char* spec = "%.2f") {
  char text[32];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

// The first number of Google Benchmark's "load_avg" ("[6.2,5.1,4.0]" once read as text).
bool first_load(const std::string& text, double& load) {
  const size_t start = text.find_first_of("0123456789.");
  return start != std::string::npos && std::sscanf(text.c_str() + start, "%lf", &load) == 1;
}

// As the report's tables print numbers: 2600, not 2.6e+03.
std::string microseconds(double value) { return format(value, value >= 1000 ? "%.0f" : "%.3g"); }

std::string span(double lo, double hi) { return microseconds(lo) + "–" + microseconds(hi) + " µs"; }

}  // namespace

std::vector<std::string> busy_machine_evidence(const ResultFile& file) {
  std::vector<std::string> evidence;
  const std::string start = get(file, "condbench_machine_busy"), end = get(file, "condbench_machine_busy_end");
  if (!start.empty() || !end.empty()) {
    // What the runner saw: "2.0 other tasks running, load average 6.20 5.10 4.00 on 2 CPUs".
    auto seen = [&](const std::string& when) {
      const std::string running = get(file, "condbench_running_" + when),
                        loads = get(file, "condbench_loadavg_" + when);
      const std::string cpus = get(file, "condbench_cpus");
      std::string text = running.empty() || running == "unknown" ? "" : running + " other tasks running, ";
      text += "load average " + (loads.empty() ? std::string("unknown") : loads);
      return text + (cpus.empty() ? "" : " on " + cpus + " CPUs");
    };
    if (start == "yes") evidence.push_back(name_of(file) + ": busy when the run started (" + seen("start") + ")");
    if (end == "yes") evidence.push_back(name_of(file) + ": busy when the run ended (" + seen("end") + ")");
    return evidence;
  }
  // Older files, and the Python peer's: only the load average at the start.
  double load = 0;
  const std::string cpus_text = get(file, "num_cpus");
  const int cpus = cpus_text.empty() ? 0 : std::atoi(cpus_text.c_str());
  if (first_load(get(file, "load_avg"), load) && machine_busy(load, cpus))
    evidence.push_back(name_of(file) + ": load average " + format(load) + " on " + std::to_string(cpus) +
                       " CPUs when the run started (busy above " + format(kBusyLoadPerCpu * cpus, "%.1f") + ")");
  return evidence;
}

std::vector<std::string> flat_work_evidence(const std::vector<Group>& groups) {
  std::vector<std::string> evidence;
  for (const Group& g : groups)
    for (const std::string& strategy : g.strategies) {
      std::vector<std::pair<std::string, const Cell*>> cells;
      for (const std::string& scenario : g.scenarios)
        if (const Cell* c = g.cell(strategy, scenario)) cells.push_back({scenario, c});
      if (cells.size() < 2) continue;
      bool flat = true;
      const auto first = cells.front().second->counters.find("flops_executed");
      if (first == cells.front().second->counters.end() || first->second <= 0) continue;
      for (const auto& [scenario, c] : cells) {
        auto it = c->counters.find("flops_executed");
        flat = flat && it != c->counters.end() && std::abs(it->second - first->second) <= 1e-9 * first->second;
      }
      if (!flat) continue;
      const std::pair<std::string, const Cell*>* fast = &cells.front();
      const std::pair<std::string, const Cell*>* slow = &cells.front();
      for (const auto& entry : cells) {
        if (entry.second->median_us < fast->second->median_us) fast = &entry;
        if (entry.second->median_us > slow->second->median_us) slow = &entry;
      }
      const MedianInterval& lo = fast->second->interval;
      const MedianInterval& hi = slow->second->interval;
      if (std::isnan(lo.high) || std::isnan(hi.low) || hi.low <= lo.high * (1 + kFlatWorkTolerance)) continue;
      evidence.push_back(strategy + " does the same work in every scenario (" + format(first->second, "%.0f") +
                         " FLOPs per inference) but took " + span(fast->second->median_us, slow->second->median_us) +
                         " (median, " + fast->first + " vs " + slow->first + ", intervals " + span(lo.low, lo.high) +
                         " and " + span(hi.low, hi.high) + ") on " + g.device_label + ", batch " +
                         std::to_string(g.batch) + ", " + g.model_text());
    }
  return evidence;
}

RunCheck check_run(const std::vector<ResultFile>& files, const std::vector<Group>& groups) {
  RunCheck check;
  for (const ResultFile& f : files) {
    for (std::string& line : busy_machine_evidence(f)) check.evidence.push_back(std::move(line));
    const std::string slowdown = get(f, "condbench_test_slowdown");
    if (!slowdown.empty())
      check.notes.push_back(name_of(f) + " was recorded with an artificial slowdown (CONDBENCH_TEST_SLOWDOWN=" +
                            slowdown + "): a test of the statistics, not a measurement");
  }
  for (std::string& line : flat_work_evidence(groups)) check.evidence.push_back(std::move(line));
  return check;
}

}  // namespace condbench::report
