#pragma once
// Scenarios decide where rows exit (docs/design.md §3): exit:k forces every row out at k; mix:* use
// thresholds calibrated on the input pool so that the realised exit shares match a target.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "condbench/config.h"

namespace condbench {

enum class ScenarioKind { forced_exit, mix };

// A scenario, parsed once (at the command line) and passed as a value: exit:K or mix:SHAPE.
class Scenario {
 public:
  // Throws condbench::Error naming the text when it is not exit:K (K of 1 to 9 digits, >= 1) or
  // mix:early|uniform|late. Whether exit:K exists for a model depth is fits()'s question.
  static Scenario parse(const std::string& text);
  static Scenario forced(int exit_id);
  static Scenario mix(const std::string& shape);

  ScenarioKind kind() const { return kind_; }
  int forced_exit() const { return forced_exit_; }  // exit:K's K
  // Every scenario exists for every depth except exit:K past the final exit (K > blocks + 1).
  bool fits(int blocks) const { return kind_ == ScenarioKind::mix || forced_exit_ <= blocks + 1; }
  // mix: the target share of rows per exit for a model of `blocks` blocks, summing to 1.
  std::vector<double> target_shares(int blocks) const;
  std::string str() const;  // "exit:2", "mix:early": the benchmark name's axis

  friend bool operator==(const Scenario& a, const Scenario& b) { return a.str() == b.str(); }
  friend bool operator<(const Scenario& a, const Scenario& b) { return a.str() < b.str(); }

 private:
  ScenarioKind kind_ = ScenarioKind::forced_exit;
  int forced_exit_ = 1;
  std::string shape_;
};

// exit:1 .. exit:{blocks+1}, then mix:early, mix:uniform, mix:late.
std::vector<Scenario> all_scenarios(int blocks);

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

// One model's thresholds per scenario, each made once and kept for the run (a family's workload, the
// decoder's): a forced exit's at once, a mix's calibrated on the exit scores `scores` gives, row-major
// [rows][exits before the final one], asked for once, at the first mix. Safe to ask from several
// threads.
class ScenarioThresholds {
 public:
  ScenarioThresholds(int blocks, std::function<std::vector<float>()> scores)
      : blocks_(blocks), scores_(std::move(scores)) {}
  // Throws condbench::Error for a scenario whose exit the model does not have.
  const std::vector<float>& operator()(const Scenario& scenario) const;

 private:
  int blocks_;
  std::function<std::vector<float>()> scores_;
  mutable std::mutex mutex_;
  mutable std::vector<float> scored_;
  mutable std::map<std::string, std::vector<float>> made_;  // references to its values stay valid
};

// An order of the rows (by exit id, 1..num_exits) in which every prefix holds each exit's share of
// the whole as closely as a greedy schedule can: at each position, the exit whose count is
// furthest below its share. Rows of one exit keep their pool order.
std::vector<int64_t> interleaved_order(const std::vector<int>& exits, int num_exits);

// Exit ids (1..blocks+1) that thresholds give for the confidence matrix above.
std::vector<int> exits_for(const std::vector<float>& confidences, int rows, int blocks,
                           const std::vector<float>& thresholds);

}  // namespace condbench
