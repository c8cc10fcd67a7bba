#pragma once
// What the machine did to the numbers, measured rather than feared. A strategy doing the same work in
// two scenarios of a group is a free A/A test: any verdict between its two cells is the machine's
// drift, not the code's. calibrate() judges every such pair with the verdict rule at no allowance and
// takes the drift they show, per file and per bound (host or device), as the least allowance of every
// verdict on that file's cells of that bound. Nothing is vetoed: a verdict the measured drift flips is
// withheld and says why (Judgement::withheld), every other stands. A busy machine (the run's recorded
// load) marks its file's cells; it silences no verdict that survives the intervals and the allowance.
#include <string>
#include <vector>

#include "analysis.h"
#include "result_file.h"

namespace condbench::report {

// One line per sign that `file` was recorded on a busy machine: the runner's own verdicts
// (condbench_machine_busy, condbench_machine_busy_end) or, for files without them, Google
// Benchmark's load_avg against num_cpus under the same rule. Empty when nothing says busy.
std::vector<std::string> busy_machine_evidence(const ResultFile& file);

// A cell's bound: cpu without a GPU figure; host where the strategy waits on the host mid-inference
// (host_syncs > 0) or its host time (wall less gpu_us) exceeds its device time; else device.
Bound bound_of(const Cell& cell);

// The counters that say what work an inference did. Two cells of one strategy did the same work
// when each of these is present in both and equal, or absent from both, and flops_executed is there.
inline constexpr const char* kWorkCounters[] = {"flops_executed",  "launches",   "host_syncs",
                                                "bytes_read_back", "blocks_run", "heads_run"};
bool same_work(const Cell& a, const Cell& b);

// The drift one file's equal-work pairs of one bound showed.
struct DriftClass {
  size_t file = 0;  // index into the report's files
  Bound bound = Bound::cpu;
  size_t pairs = 0;      // equal-work pairs judged
  size_t claims = 0;     // of them, called faster at no allowance: false claims, the machine's
  double shown = 1;      // the largest conservative factor of those claims; 1 when none
  std::string shown_by;  // the pair that showed it: "torch/masked · batch 64 · hidden 1024, 3 blocks: exit:4 / exit:1"
};
struct Calibration {
  std::vector<DriftClass> classes;  // by file, then bound; only those with a pair
  const DriftClass* find(size_t file, Bound bound) const;
};
Calibration calibrate(const std::vector<Group>& groups, double min_effect = kDefaultMinEffect);
// Stamps every cell with its class's measured drift (Cell::measured_drift, drift_shown_by).
void apply_calibration(const Calibration& calibration, std::vector<Group>& groups);

struct RunCheck {
  std::vector<std::string> busy;   // why some files count as recorded on a busy machine: a mark
  std::vector<std::string> notes;  // worth saying (e.g. an artificial slowdown)
  Calibration calibration;
};
RunCheck check_run(const std::vector<ResultFile>& files, const std::vector<Group>& groups);

}  // namespace condbench::report
