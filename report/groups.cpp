// Series gathered into groups (one model, device, batch and threads, from every file) and each
// group's best strategy per scenario.
#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "condbench/result_format.h"
#include "stability.h"

namespace condbench::report {

const Cell* Group::cell(const std::string& strategy, const std::string& scenario) const {
  auto it = cells.find({strategy, scenario});
  return it == cells.end() ? nullptr : &it->second;
}

std::optional<double> Group::speedup_over_eager(const std::string& strategy, const std::string& scenario) const {
  const Cell* base = cell(kEagerHost, scenario);
  const Cell* other = cell(strategy, scenario);
  if (!base || !other || other->median_us <= 0) return std::nullopt;
  return base->median_us / other->median_us;
}

std::string Group::model_text() const { return condbench::model_text(model); }

std::string Group::model_short() const { return condbench::model_short(model); }

namespace {

// The looks a file's verdicts are split over: its context's count, 1 without one. A file from another
// machine may say anything: a count that is not a small whole number counts as the most there can be.
size_t looks(const ResultFile& file) {
  const auto it = file.context.find(kAnswerLooksContext);
  if (it == file.context.end()) return 1;
  const std::string& text = it->second;
  if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != std::string::npos) return kAnswerLooks;
  return std::clamp<size_t>(std::stoul(text), 1, 99);
}

}  // namespace

std::vector<Group> make_groups(const std::vector<ResultFile>& files, double unstable_cv) {
  // every axis of the name but the scenario: the model's, whatever they are, and the batch
  std::map<std::tuple<std::string, std::string, int64_t>, Group> groups;
  std::vector<bool> busy;
  for (const ResultFile& file : files) busy.push_back(!busy_machine_evidence(file).empty());
  for (size_t index = 0; index < files.size(); ++index)
    for (const ResultFile& file = files[index]; const Series& s : file.series) {
      if (s.primitive || s.times_us.empty()) continue;
      const std::string label = file.device_label(s.device);
      Group& g = groups[{label, model_order(s.model), s.batch}];
      g.device_label = label;
      g.batch = s.batch;
      g.blocks = s.blocks;
      g.model = s.model;
      g.per_token = g.per_token || file.per_token(model_family(s.model));
      // A benchmark present in several files keeps the first file's numbers.
      Cell cell = make_cell(s.times_us, unstable_cv);
      cell.counters = s.counters;
      cell.file = index;
      cell.interleaved = file.interleaved();
      cell.name = s.name;
      cell.looks = looks(file);
      cell.busy = busy[index];
      cell.lockstep = file.lockstep();
      cell.lockstep_allowance = file.lockstep_allowance();
      // a GPU time for every repetition or none: a file cut short or crafted may mix them
      // one figure per repetition, or (files before it) one per case repeated in each: that is one figure
      if (s.gpu_us.size() == s.times_us.size() && !s.gpu_us.empty()) {
        const bool once = std::all_of(s.gpu_us.begin(), s.gpu_us.end(), [&](double v) { return v == s.gpu_us[0]; });
        cell.gpu_us = once ? std::vector<double>{s.gpu_us[0]} : s.gpu_us;
        cell.gpu_interval = median_interval(cell.gpu_us);
      }
      cell.bound = bound_of(cell);
      g.cells.emplace(std::make_pair(s.strategy_key(), s.scenario), std::move(cell));
    }
  std::vector<Group> out;
  for (auto& [key, g] : groups) {
    std::set<std::string> strategies, scenarios;
    for (const auto& [k, cell] : g.cells) {
      strategies.insert(k.first);
      scenarios.insert(k.second);
    }
    g.strategies.assign(strategies.begin(), strategies.end());
    g.scenarios.assign(scenarios.begin(), scenarios.end());
    std::sort(g.scenarios.begin(), g.scenarios.end(),
              [](const std::string& a, const std::string& b) { return scenario_rank(a) < scenario_rank(b); });
    out.push_back(std::move(g));
  }
  apply_calibration(calibrate(out), out);
  return out;
}

std::vector<Winner> best_strategies(const std::vector<Group>& groups) {
  std::vector<Winner> winners;
  for (const Group& g : groups)
    for (const std::string& scenario : g.scenarios) {
      std::vector<std::pair<double, std::string>> ranked;
      for (const std::string& s : g.strategies)
        if (const Cell* c = g.cell(s, scenario)) ranked.push_back({c->median_us, s});
      if (ranked.empty()) continue;
      std::sort(ranked.begin(), ranked.end());
      const Cell& best = *g.cell(ranked[0].second, scenario);
      Winner w;
      w.device_label = g.device_label;
      w.scenario = scenario;
      w.batch = g.batch;
      w.model = g.model;
      w.strategy = ranked[0].second;
      w.median_us = ranked[0].first;
      w.interval = best.interval;
      w.unstable = best.unstable;
      for (size_t i = 1; i < ranked.size(); ++i) {
        const Judgement j = judge(best, *g.cell(ranked[i].second, scenario));
        if (j.standing == Standing::same) w.same.push_back(ranked[i].second);
        if (j.standing == Standing::ambiguous) w.ambiguous.push_back(ranked[i].second);
        if (i == 1) {
          w.runner_up = ranked[1].second;
          w.margin = j.factor;
        }
      }
      winners.push_back(w);
    }
  return winners;
}

}  // namespace condbench::report
