#pragma once
// Scenarios decide where rows exit (docs/design.md §3): exit:k forces every row out at k; mix:* use
// thresholds calibrated on the input pool so that the realised exit shares match a target.
#include <string>
#include <vector>

#include "condbench/config.h"

namespace condbench {

enum class ScenarioKind { forced_exit, mix };

struct ScenarioSpec {
  std::string name;  // "exit:2", "mix:early", ...
  ScenarioKind kind = ScenarioKind::forced_exit;
  int forced_exit = 0;                // exit:k
  std::vector<double> target_shares;  // mix:*, one per exit, summing to 1
};

// exit:1 .. exit:{blocks+1}, then mix:early, mix:uniform, mix:late.
std::vector<std::string> scenario_names(int blocks);
// Parses and checks a scenario name for a model depth; throws condbench::Error naming it.
ScenarioSpec parse_scenario(const std::string& name, int blocks);

// The target shapes of docs/design.md §3 for 4 exits (early 70/20/5/5, uniform 25 each, late 5/5/20/70),
// spread to any number of exits by reading the 4-bin histogram as a step density on [0, 1) and
// integrating it over num_exits equal bins.
std::vector<double> mix_target_shares(const std::string& shape, int num_exits);

// exit:k thresholds: 1.0 (never fires) before k, 0.0 (always fires) at k, 1.0 after.
std::vector<float> forced_thresholds(int blocks, int exit_id);

// Thresholds t_1..t_blocks so that, walking the exits in order, the share of pool rows that exit
// at each matches target_shares. confidences is row-major [rows][blocks]: max softmax at each
// exit head. Each threshold lies midway between two neighbouring confidences, at the widest gap
// within half a percent of the rows of the target, so a row's decision does not hang on the last
// bit of how a strategy rounds.
std::vector<float> calibrate_thresholds(const std::vector<float>& confidences, int rows, int blocks,
                                        const std::vector<double>& target_shares);

// An order of the rows (by exit id, 1..num_exits) in which every prefix holds each exit's share of
// the whole as closely as a greedy schedule can: at each position, the exit whose count is
// furthest below its share. Rows of one exit keep their pool order.
std::vector<int64_t> interleaved_order(const std::vector<int>& exits, int num_exits);

// Exit ids (1..blocks+1) that thresholds give for the confidence matrix above.
std::vector<int> exits_for(const std::vector<float>& confidences, int rows, int blocks,
                           const std::vector<float>& thresholds);

}  // namespace condbench
