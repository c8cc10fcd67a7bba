#pragma once
// How quiet the machine is: what /proc and /sys say about load, CPU frequency governor and boost,
// and the one rule that calls a machine busy. The runner checks it before and after a run and
// records it in the result's context; condbench-report applies the same rule to a result file, so
// a run is judged by the numbers it recorded, not by where the report happens to be made.
#include <optional>
#include <string>
#include <vector>

namespace condbench {

// Where /proc and /sys are read from: $CONDBENCH_SYSROOT when set (the tests point it at a fake
// tree), else the real root.
std::string sysroot();

struct MachineState {
  int cpus = 0;                                // online CPUs
  std::optional<double> running;               // other runnable tasks now (median of a few samples, minus us)
  std::optional<double> load1, load5, load15;  // load averages
  std::string governor;                        // "performance", "powersave", "mixed: a, b", or "" when /sys has none
  std::optional<bool> boost;                   // turbo/boost on, when /sys shows it
};

// Reads the machine under `root`. `samples` readings of the run queue (/proc/stat procs_running),
// `interval_ms` apart: one reading catches a daemon's blink, the median of several does not.
// `self` runnable tasks are ours (the caller) and are not counted as other work.
MachineState read_machine_state(const std::string& root, int samples = 5, int interval_ms = 20, int self = 1);

// The rule: the machine is busy when other work keeps more than half of its CPUs running. A
// benchmark on a busy machine measures the scheduler as much as the code (see docs/trusting.md).
constexpr double kBusyLoadPerCpu = 0.5;
bool machine_busy(double other_load, int cpus);
// A reference run's bar (--require-quiet, --wait-quiet): not busy, and the 1-minute load average
// below the same line. The average still carries the last minute's work (an export, a compile, a
// build), which the run queue no longer shows; a run that starts on it starts while the machine's
// caches and clocks are still those of that work.
bool machine_settled(const MachineState& state);
// Fewer CPUs free than threads the run uses: its parallel parts wait for a core.
bool threads_exceed_free_cpus(double other_load, int cpus, int threads);

// One line per finding worth a warning (no prefix; the caller adds its own), for a run with
// `threads` threads: busy machine, threads beyond the free CPUs, governor not "performance",
// boost on. Empty when the machine looks fit to measure on.
std::vector<std::string> machine_warnings(const MachineState& state, int threads);

// The load a check judges: other runnable tasks when sampled, else the 1-minute load average.
std::optional<double> other_load(const MachineState& state);
// A load average or a count of tasks as the warnings write it: "1.25" (spec "%.1f": "1.2").
std::string load_text(double value, const char* spec = "%.2f");

}  // namespace condbench
