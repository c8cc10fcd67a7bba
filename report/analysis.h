#pragma once
// From result files to what the report shows: latency tables per model and batch, the winner of
// each (device, batch, hidden, scenario), the sentences that say it, where the time goes, and the
// A/B comparison. Plain data, no formatting beyond the sentences, so tests check exact values.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "result_file.h"
#include "statistics.h"

namespace condbench::report {

struct Cell {
  double median_us = 0, cv = 0, q1_us = 0, q3_us = 0;
  size_t repetitions = 0;
  std::map<std::string, double> counters;
};

// One table: a machine's device, a model and a batch size.
struct Group {
  std::string device_label;  // "cpu · AMD EPYC"
  int64_t batch = 0, hidden = 0, blocks = 0;
  std::vector<std::string> strategies;  // "engine/strategy", in a stable order
  std::vector<std::string> scenarios;   // exit:1.., then mix:early, mix:uniform, mix:late
  std::map<std::pair<std::string, std::string>, Cell> cells;  // (strategy, scenario)

  const Cell* cell(const std::string& strategy, const std::string& scenario) const;
  // median(eager_host) / median(strategy): > 1 means faster than eager_host (torch engine).
  std::optional<double> speedup_over_eager(const std::string& strategy, const std::string& scenario) const;
};

std::vector<Group> make_groups(const std::vector<ResultFile>& files);

struct Winner {
  std::string device_label, scenario;
  int64_t batch = 0, hidden = 0, blocks = 0;
  std::string strategy, runner_up;  // runner_up empty when only one strategy ran
  double median_us = 0;
  double margin = 0;                // median(runner-up) / median(winner)
};
std::vector<Winner> best_strategies(const std::vector<Group>& groups);

// A few plain sentences per device, generated from the data, e.g. "At batch 1 (hidden 64, 3
// blocks) on cpu · X, native/fused is 55× faster than torch/eager_host when most rows exit late."
std::vector<std::string> recommendations(const std::vector<Group>& groups);

// The primitives a run measured on a device (name -> median µs).
std::map<std::string, std::map<std::string, double>> primitive_floors(const std::vector<ResultFile>& files);

enum class Verdict { same, faster, slower, too_few_repetitions };
const char* to_string(Verdict verdict);

struct Comparison {
  std::string name;
  double median_a_us = 0, median_b_us = 0;
  double change = 0;  // (b - a) / a
  std::optional<UTest> test;
  Verdict verdict = Verdict::same;
};
constexpr double kSignificance = 0.05;
std::vector<Comparison> compare(const ResultFile& a, const ResultFile& b);

// "6.1×", "55×": speedups as the sentences and tables print them.
std::string format_ratio(double ratio);
std::string scenario_phrase(const std::string& scenario);

}  // namespace condbench::report
