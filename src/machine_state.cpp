#include "condbench/machine_state.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace condbench {

namespace {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// "0-3,6,8-9" (sysfs cpu lists) -> 7
int count_cpu_list(const std::string& list) {
  int count = 0;
  std::stringstream in(list);
  for (std::string range; std::getline(in, range, ',');) {
    int lo = 0, hi = 0;
    if (std::sscanf(range.c_str(), "%d-%d", &lo, &hi) == 2 && hi >= lo)
      count += hi - lo + 1;
    else if (std::sscanf(range.c_str(), "%d", &lo) == 1)
      count += 1;
  }
  return count;
}

std::optional<int> procs_running(const std::string& root) {
  std::ifstream in(root + "/proc/stat");
  std::string key;
  long value = 0;
  for (std::string line; std::getline(in, line);)
    if (std::istringstream(line) >> key >> value && key == "procs_running") return static_cast<int>(value);
  return std::nullopt;
}

}  // namespace

std::string load_text(double value, const char* spec) {
  char text[32];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

std::string sysroot() {
  const char* root = std::getenv("CONDBENCH_SYSROOT");
  return root ? root : "";
}

MachineState read_machine_state(const std::string& root, int samples, int interval_ms, int self) {
  MachineState state;
  if (auto online = read_first_line(root + "/sys/devices/system/cpu/online")) state.cpus = count_cpu_list(*online);
  if (state.cpus <= 0 && root.empty()) state.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));

  if (auto line = read_first_line(root + "/proc/loadavg")) {
    double l1 = 0, l5 = 0, l15 = 0;
    if (std::sscanf(line->c_str(), "%lf %lf %lf", &l1, &l5, &l15) == 3) {
      state.load1 = l1;
      state.load5 = l5;
      state.load15 = l15;
    }
  }

  std::vector<double> readings;
  for (int i = 0; i < samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    if (auto n = procs_running(root)) readings.push_back(std::max(0, *n - self));
  }
  if (!readings.empty()) {
    std::sort(readings.begin(), readings.end());
    const size_t mid = readings.size() / 2;
    state.running = readings.size() % 2 ? readings[mid] : 0.5 * (readings[mid - 1] + readings[mid]);
  }

  std::set<std::string> governors;
  for (int cpu = 0; cpu < std::max(state.cpus, 1); ++cpu)
    if (auto g =
            read_first_line(root + "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor"))
      governors.insert(*g);
  if (governors.size() == 1)
    state.governor = *governors.begin();
  else if (governors.size() > 1) {
    state.governor = "mixed:";
    for (const std::string& g : governors) state.governor += " " + g;
  }

  // Two ways kernels show boost: cpufreq/boost (acpi-cpufreq, amd-pstate) and intel_pstate's no_turbo.
  if (auto boost = read_first_line(root + "/sys/devices/system/cpu/cpufreq/boost"))
    state.boost = *boost == "1";
  else if (auto no_turbo = read_first_line(root + "/sys/devices/system/cpu/intel_pstate/no_turbo"))
    state.boost = *no_turbo == "0";
  return state;
}

bool machine_busy(double other, int cpus) { return cpus > 0 && other > kBusyLoadPerCpu * cpus; }

bool machine_settled(const MachineState& state) {
  const std::optional<double> other = other_load(state);
  if (other && machine_busy(*other, state.cpus)) return false;
  return !state.load1 || state.cpus <= 0 || *state.load1 < kBusyLoadPerCpu * state.cpus;
}

bool threads_exceed_free_cpus(double other, int cpus, int threads) {
  // Three quarters of a CPU of slack: a quiet machine's load average of 0.5 (daemons, the shell)
  // leaves room for a thread per CPU; one other runnable task does not.
  return cpus > 0 && threads > cpus - other + 0.75;
}

std::optional<double> other_load(const MachineState& state) { return state.running ? state.running : state.load1; }

std::vector<std::string> machine_warnings(const MachineState& state, int threads) {
  std::vector<std::string> warnings;
  const std::optional<double> other = other_load(state);
  const std::string what = state.running ? load_text(*state.running, "%.1f") + " other tasks running"
                                         : "load average " + (state.load1 ? load_text(*state.load1) : std::string("?"));
  if (other && machine_busy(*other, state.cpus))
    warnings.push_back("the machine is busy (" + what + " on " + std::to_string(state.cpus) +
                       " CPUs): timings will be noisy; wait for a quiet machine (--require-quiet refuses to start)");
  else if (other && threads_exceed_free_cpus(*other, state.cpus, threads))
    warnings.push_back(std::to_string(threads) + " threads but only " + load_text(state.cpus - *other, "%.1f") +
                       " CPUs free (" + what + " on " + std::to_string(state.cpus) +
                       " CPUs): use --threads or wait for a quiet machine");
  if (!state.governor.empty() && state.governor != "performance")
    warnings.push_back("CPU frequency governor is '" + state.governor +
                       "', not 'performance': the clock may change during the run");
  if (state.boost && *state.boost)
    warnings.push_back("CPU boost (turbo) is on: the clock follows temperature and load, so runs drift");
  return warnings;
}

}  // namespace condbench
