#pragma once
// condbench-report --pairs: the verdict rule's judgement of pairs of cells, as data, for the scripts
// that measure the rule itself (scripts/interval_widths.py, scripts/drift_allowance.py). They read
// the interval, its order statistic, the drift allowance and the verdict from here and keep no
// statistics of their own: judge() is the one owner.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis.h"
#include "result_file.h"

namespace condbench::report {

struct JudgedPair {
  std::string file;   // where the cells were read (both, or the first's for pairs_across)
  std::string group;  // "cpu · X, hidden 64, 3 blocks, batch 1": the group both belong to
  // Each cell: its benchmark name, strategy ("torch/masked"), scenario, median and repetitions.
  struct Side {
    std::string name, strategy, scenario;
    double median_us = 0;
    size_t repetitions = 0;
  } a, b;
  Judgement judgement;  // judge(a, b)
};

// The most pairs pairs_within judges: a group's pairs grow with the square of its cells, and a few
// megabytes of crafted file (thousands of strategies in one group) would ask for gigabytes. The
// largest group of `condbench --full --device=cpu` has 80 cells (3,160 pairs); a group of 1,400
// cells (979,300 pairs) took 6 s and a peak of 650 MB here.
constexpr size_t kMaxPairs = 1000000;
// Within each file on its own: every two cells of one group (device, model, batch), each pair once.
// Throws condbench::Error, before judging any, where that is more than kMaxPairs.
std::vector<JudgedPair> pairs_within(const std::vector<ResultFile>& files);
// Across two files (two runs: two processes): each benchmark both hold, `a`'s cell against `b`'s.
std::vector<JudgedPair> pairs_across(const ResultFile& a, const ResultFile& b);
// What a set of pairs shows as a whole, for an A/A (scripts/aa-check --lockstep): how many, how many
// came out faster, the drift shown (how far beyond 1 the farthest interval of a ratio lies: 1 where
// every interval holds 1) and the largest ratio of two medians.
nlohmann::json pairs_summary(const std::vector<JudgedPair>& pairs);
// {"pairs": [...], "summary": pairs_summary}, written to `out` a pair at a time (a million pairs as
// one JSON value would take gigabytes): the sides, and the judgement's interval (low, high,
// median_ratio, k, confidence), drift, standing, factor, detectable, cannot_exclude and outliers;
// an infinite figure is null.
void write_pairs_json(std::ostream& out, const std::vector<JudgedPair>& pairs);

}  // namespace condbench::report
