#include "report_test_support.h"

#include <set>

#include "statistics.h"

namespace condbench::report::test_support {

std::string fixture_path() { return std::string(CONDBENCH_REPORT_FIXTURES) + "/small.json"; }

Group group_of(const std::map<std::pair<std::string, std::string>, std::vector<double>>& samples) {
  Group g;
  g.device_label = "cuda · X";
  g.batch = 1;
  g.blocks = 3;
  g.model = {{"hidden", "64"}, {"blocks", "3"}};
  std::set<std::string> strategies, scenarios;
  for (const auto& [key, times] : samples) {
    g.cells[key] = make_cell(times);
    g.cells[key].interleaved = true;  // one randomly interleaved run: no drift allowance
    strategies.insert(key.first);
    scenarios.insert(key.second);
  }
  g.strategies.assign(strategies.begin(), strategies.end());
  g.scenarios.assign(scenarios.begin(), scenarios.end());
  return g;
}

ResultFile one_series(const std::vector<double>& times) {
  ResultFile f;
  Series s;
  s.name = "early_exit/x";
  s.times_us = times;
  f.series = {s};
  return f;
}

}  // namespace condbench::report::test_support
