#pragma once
// Was the run disturbed? The checks a report makes before it gives any advice: the machine's load
// as the run recorded it, and plausibility — a strategy whose work does not depend on the
// scenario must take the same time in every scenario. Either failing means the numbers measure
// the machine, not the code, and the report says so at the top and recommends nothing.
#include <string>
#include <vector>

#include "analysis.h"
#include "result_file.h"

namespace condbench::report {

// Work-independent timings may differ across scenarios by this much beyond their intervals before
// the run counts as disturbed: different pool data and allocations move a few percent honestly.
constexpr double kFlatWorkTolerance = 0.10;

// One line per sign that `file` was recorded on a busy machine: the runner's own verdicts
// (condbench_machine_busy, condbench_machine_busy_end) or, for files without them, Google
// Benchmark's load_avg against num_cpus under the same rule. Empty when nothing says busy.
std::vector<std::string> busy_machine_evidence(const ResultFile& file);

// One line per strategy whose flops_executed is the same in every scenario of a group but whose
// timings are not: the slowest scenario's interval starts more than kFlatWorkTolerance above the
// fastest one's end.
std::vector<std::string> flat_work_evidence(const std::vector<Group>& groups);

struct RunCheck {
  std::vector<std::string> evidence;  // why the run counts as disturbed; empty when it does not
  std::vector<std::string> notes;     // worth saying, not disturbing (e.g. an artificial slowdown)
  bool disturbed() const { return !evidence.empty(); }
};
RunCheck check_run(const std::vector<ResultFile>& files, const std::vector<Group>& groups);

}  // namespace condbench::report
