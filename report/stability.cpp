#include "stability.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "condbench/machine_state.h"

namespace condbench::report {

namespace {

std::string name_of(const ResultFile& file) { return std::filesystem::path(file.path).filename().string(); }

// The first number of Google Benchmark's "load_avg" ("[6.2,5.1,4.0]" once read as text).
bool first_load(const std::string& text, double& load) {
  const size_t start = text.find_first_of("0123456789.");
  return start != std::string::npos && std::sscanf(text.c_str() + start, "%lf", &load) == 1;
}

}  // namespace

std::vector<std::string> busy_machine_evidence(const ResultFile& file) {
  std::vector<std::string> evidence;
  const std::string start = file.said("condbench_machine_busy"), end = file.said("condbench_machine_busy_end");
  if (!start.empty() || !end.empty()) {
    // What the runner saw: "2.0 other tasks running, load average 6.20 5.10 4.00 on 2 CPUs".
    auto seen = [&](const std::string& when) {
      const std::string running = file.said("condbench_running_" + when),
                        loads = file.said("condbench_loadavg_" + when);
      const std::string cpus = file.said("condbench_cpus");
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
  const std::string cpus_text = file.said("num_cpus");
  const int cpus = cpus_text.empty() ? 0 : std::atoi(cpus_text.c_str());
  if (first_load(file.said("load_avg"), load) && machine_busy(load, cpus))
    evidence.push_back(name_of(file) + ": load average " + load_text(load) + " on " + std::to_string(cpus) +
                       " CPUs when the run started (busy above " + load_text(kBusyLoadPerCpu * cpus, "%.1f") + ")");
  return evidence;
}

Bound bound_of(const Cell& cell) {
  const auto gpu = cell.counters.find("gpu_us");
  const auto syncs = cell.counters.find("host_syncs");
  const bool gpu_cell = gpu != cell.counters.end() || cell.counters.count("gpu_span_us") > 0;
  if (!gpu_cell) return Bound::cpu;
  if (syncs != cell.counters.end() && syncs->second > 0) return Bound::host;
  const double device = cell.gpu_us.empty() ? gpu->second : median(cell.gpu_us);
  return cell.median_us - device > device ? Bound::host : Bound::device;
}

bool same_work(const Cell& a, const Cell& b) {
  if (!a.counters.count("flops_executed")) return false;
  for (const char* counter : kWorkCounters) {
    const auto x = a.counters.find(counter), y = b.counters.find(counter);
    if ((x == a.counters.end()) != (y == b.counters.end())) return false;
    if (x != a.counters.end() && std::abs(x->second - y->second) > 1e-9 * std::max(std::abs(x->second), 1.0))
      return false;
  }
  return true;
}

const DriftClass* Calibration::find(size_t file, Bound bound) const {
  for (const DriftClass& c : classes)
    if (c.file == file && c.bound == bound) return &c;
  return nullptr;
}

Calibration calibrate(const std::vector<Group>& groups, double min_effect) {
  std::map<std::pair<size_t, Bound>, DriftClass> classes;
  for (const Group& g : groups)
    for (const std::string& strategy : g.strategies)
      for (size_t i = 0; i < g.scenarios.size(); ++i)
        for (size_t k = i + 1; k < g.scenarios.size(); ++k) {
          const Cell* a = g.cell(strategy, g.scenarios[i]);
          const Cell* b = g.cell(strategy, g.scenarios[k]);
          if (!a || !b || a->file != b->file || !same_work(*a, *b)) continue;
          const Judgement j = judge_at(*a, *b, 1.0, min_effect);
          const std::vector<Bound> bounds =
              a->bound == b->bound ? std::vector<Bound>{a->bound} : std::vector<Bound>{a->bound, b->bound};
          for (const Bound bound : bounds) {
            DriftClass& c = classes[{a->file, bound}];
            c.file = a->file;
            c.bound = bound;
            ++c.pairs;
            if (j.standing != Standing::faster) continue;
            ++c.claims;
            if (j.factor > c.shown) {
              c.shown = j.factor;
              const std::string& slow = j.first_faster ? g.scenarios[k] : g.scenarios[i];
              const std::string& fast = j.first_faster ? g.scenarios[i] : g.scenarios[k];
              c.shown_by = strategy + " · batch " + std::to_string(g.batch) + " · " + g.model_text() + ": " + slow +
                           " against " + fast;
            }
          }
        }
  Calibration out;
  for (auto& [key, c] : classes) out.classes.push_back(std::move(c));
  return out;
}

void apply_calibration(const Calibration& calibration, std::vector<Group>& groups) {
  for (Group& g : groups)
    for (auto& [key, cell] : g.cells)
      if (const DriftClass* c = calibration.find(cell.file, cell.bound); c && c->claims > 0) {
        cell.measured_drift = c->shown;
        cell.drift_shown_by = c->shown_by + " (" + format_drift(c->shown) + ")";
      }
}

RunCheck check_run(const std::vector<ResultFile>& files, const std::vector<Group>& groups) {
  RunCheck check;
  for (const ResultFile& f : files) {
    for (std::string& line : busy_machine_evidence(f)) check.busy.push_back(std::move(line));
    const std::string slowdown = f.said("condbench_test_slowdown");
    if (!slowdown.empty())
      check.notes.push_back(name_of(f) + " was recorded with an artificial slowdown (CONDBENCH_TEST_SLOWDOWN=" +
                            slowdown + "): a test of the statistics, not a measurement");
  }
  check.calibration = calibrate(groups);
  return check;
}

}  // namespace condbench::report
