#include "machine_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <sys/resource.h>

#include "condbench/error.h"
#include "condbench/machine_state.h"
#include "condbench/memory_budget.h"
#include "condbench/result_format.h"

namespace condbench {

namespace {

std::string format(double value, const char* spec = "%.2f") {
  char text[32];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "; ") + line;
  return out.empty() ? "none" : out;
}

// The findings of one reading, under keys ending in `suffix` ("" at the start, "_end" at the end).
ContextEntries entries(const MachineState& state, const std::vector<std::string>& warnings, const std::string& when) {
  const std::optional<double> other = other_load(state);
  const bool busy = other && machine_busy(*other, state.cpus);
  const std::string loads = state.load1
                                ? format(*state.load1) + " " + format(*state.load5) + " " + format(*state.load15)
                                : std::string("unknown");
  return {
      {"condbench_machine_busy" + std::string(when == "start" ? "" : "_end"), busy ? "yes" : "no"},
      {"condbench_running_" + when, state.running ? format(*state.running, "%.1f") : "unknown"},
      {"condbench_loadavg_" + when, loads},
      {"condbench_machine_warnings_" + when, join(warnings)},
  };
}

}  // namespace

ContextEntries check_machine_before_run(int threads, bool require_quiet) {
  const MachineState state = read_machine_state(sysroot());
  const std::vector<std::string> warnings = machine_warnings(state, threads);
  const std::optional<double> other = other_load(state);
  if (require_quiet && other && machine_busy(*other, state.cpus)) fail("--require-quiet: " + warnings.front());
  for (const std::string& w : warnings) std::cerr << "condbench: warning: " << w << "\n";
  ContextEntries context = entries(state, warnings, "start");
  context.push_back({"condbench_cpus", std::to_string(state.cpus)});
  context.push_back({"condbench_cpu_governor", state.governor.empty() ? "unknown" : state.governor});
  context.push_back({"condbench_cpu_boost", state.boost ? (*state.boost ? "on" : "off") : "unknown"});
  return context;
}

ContextEntries check_machine_after_run(int threads) {
  // Our benchmark threads have stopped; a thread pool may spin a moment longer before it sleeps.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const MachineState state = read_machine_state(sysroot(), 5, 50);
  std::vector<std::string> warnings;
  const std::optional<double> other = other_load(state);
  // The 1-minute load average over the run's last minute holds our own threads: at most `threads`.
  const std::optional<double> during =
      state.load1 ? std::optional<double>(std::max(0.0, *state.load1 - threads)) : std::nullopt;
  if ((other && machine_busy(*other, state.cpus)) || (during && machine_busy(*during, state.cpus)))
    warnings.push_back("the machine was busy at the end of the run (" +
                       (state.running ? format(*state.running, "%.1f") + " other tasks running, " : std::string()) +
                       "load average " + (state.load1 ? format(*state.load1) : std::string("?")) + " on " +
                       std::to_string(state.cpus) + " CPUs): these timings are suspect");
  for (const std::string& w : warnings) std::cerr << "condbench: warning: " << w << "\n";
  ContextEntries context = entries(state, warnings, "end");
  context.front().second = warnings.empty() ? "no" : "yes";
  context.push_back({kPeakMemoryContext, peak_resident_memory()});
  return context;
}

std::string peak_resident_memory() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return "unknown";
  const double kib = static_cast<double>(usage.ru_maxrss);  // Linux: kilobytes
  return bytes_text(kib * 1024) + " (" + std::to_string(usage.ru_maxrss) + " kB, getrusage maxrss)";
}

}  // namespace condbench
