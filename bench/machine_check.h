#pragma once
// The runner's side of the machine check: read the machine before the run (warn, or refuse under
// --require-quiet) and after it, and record both in the result's context. The reading and the
// rule itself live in condbench/machine_state.h, shared with condbench-report.
#include <string>
#include <utility>
#include <vector>

namespace condbench {

using ContextEntries = std::vector<std::pair<std::string, std::string>>;

// Prints one "condbench: warning: ..." line on stderr per finding and returns the context entries
// (condbench_machine_busy, condbench_running_start, ...). With `wait_quiet_s` > 0 it first reads
// the machine every 2 s until it is settled (machine_settled) or that many seconds have passed,
// saying so on stderr, and records the wait (condbench_quiet_wait_s). With `require_quiet`, a
// machine still not settled throws condbench::Error: one line, exit code 2, nothing run.
ContextEntries check_machine_before_run(int threads, bool require_quiet, int wait_quiet_s = 0);

// The same after the run (condbench_machine_busy_end, ...): load that came up during the run.
// The run queue is read once our threads have settled; the 1-minute load average still holds up
// to `threads` of ours, and is judged less those.
// With the process's peak resident memory (peak_resident_memory), under kPeakMemoryContext
// (result_format.h).
ContextEntries check_machine_after_run(int threads);

// The process's peak resident memory so far, from getrusage (ru_maxrss): "1.23 GiB (1290240 kB,
// getrusage maxrss)". The run's context keeps it and the console's last line says it: a default
// run must fit a laptop (docs/input.md, "The memory budget").
std::string peak_resident_memory();

}  // namespace condbench
