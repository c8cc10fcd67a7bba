#include "machine_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
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

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "; ") + line;
  return out.empty() ? "none" : out;
}

// The findings of one reading, under keys ending in `suffix` ("" at the start, "_end" at the end).
ContextEntries entries(const MachineState& state, const std::vector<std::string>& warnings, const std::string& when) {
  const std::optional<double> other = other_load(state);
  const bool busy = other && machine_busy(*other, state.cpus);
  const std::string loads =
      state.load1 ? load_text(*state.load1) + " " + load_text(*state.load5) + " " + load_text(*state.load15)
                  : std::string("unknown");
  return {
      {"condbench_machine_busy" + std::string(when == "start" ? "" : "_end"), busy ? "yes" : "no"},
      {"condbench_running_" + when, state.running ? load_text(*state.running, "%.1f") : "unknown"},
      {"condbench_loadavg_" + when, loads},
      {"condbench_machine_warnings_" + when, join(warnings)},
  };
}

// Why a machine is not settled (machine_settled): the busy warning, else its load average.
std::string unsettled(const MachineState& state, const std::vector<std::string>& warnings) {
  const std::optional<double> other = other_load(state);
  if (other && machine_busy(*other, state.cpus)) return warnings.front();
  return "the 1-minute load average is " + load_text(state.load1.value_or(0)) + " on " + std::to_string(state.cpus) +
         " CPUs, not below " + load_text(kBusyLoadPerCpu * state.cpus, "%.1f") +
         ": the last minute's work is still in it";
}

}  // namespace

ContextEntries check_machine_before_run(int threads, bool require_quiet, int wait_quiet_s) {
  MachineState state = read_machine_state(sysroot());
  // --wait-quiet: read the machine every few seconds until it settles or the time is up.
  int waited = 0;
  if (wait_quiet_s > 0 && !machine_settled(state)) {
    std::cerr << "condbench: waiting up to " << wait_quiet_s
              << " s for a quiet machine: " << unsettled(state, machine_warnings(state, threads)) << "\n";
    const auto start = std::chrono::steady_clock::now();
    constexpr int kPollS = 2;
    while (!machine_settled(state) && waited < wait_quiet_s) {
      std::this_thread::sleep_for(std::chrono::seconds(std::min(kPollS, wait_quiet_s - waited)));
      state = read_machine_state(sysroot());
      waited = static_cast<int>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count());
    }
    if (machine_settled(state)) std::cerr << "condbench: the machine is quiet after " << waited << " s\n";
  }
  std::vector<std::string> warnings = machine_warnings(state, threads);
  const bool settled = machine_settled(state);
  if (require_quiet && !settled)
    fail("--require-quiet: " + unsettled(state, warnings) +
         (waited ? " (after waiting " + std::to_string(waited) + " s)"
                 : " (--wait-quiet=SECONDS waits for it to settle)"));
  // A wait that ran out says so, in the file too; a busy machine's warning already does.
  const std::optional<double> other = other_load(state);
  if (wait_quiet_s > 0 && !settled && !(other && machine_busy(*other, state.cpus)))
    warnings.push_back(unsettled(state, warnings) + ", after " + std::to_string(waited) + " s of --wait-quiet");
  for (const std::string& w : warnings) std::cerr << "condbench: warning: " << w << "\n";
  ContextEntries context = entries(state, warnings, "start");
  context.push_back({"condbench_cpus", std::to_string(state.cpus)});
  context.push_back({"condbench_cpu_governor", state.governor.empty() ? "unknown" : state.governor});
  context.push_back({"condbench_cpu_boost", state.boost ? (*state.boost ? "on" : "off") : "unknown"});
  if (wait_quiet_s > 0) context.push_back({"condbench_quiet_wait_s", std::to_string(waited)});
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
                       (state.running ? load_text(*state.running, "%.1f") + " other tasks running, " : std::string()) +
                       "load average " + (state.load1 ? load_text(*state.load1) : std::string("?")) + " on " +
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
