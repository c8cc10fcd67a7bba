#include "pairs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

#include "condbench/error.h"

namespace condbench::report {

namespace {

JudgedPair::Side side(const Cell& c, const std::string& strategy, const std::string& scenario) {
  return {c.name, strategy, scenario, c.median_us, c.repetitions};
}

nlohmann::json number_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

nlohmann::json side_json(const JudgedPair::Side& s) {
  return {{"name", s.name},
          {"strategy", s.strategy},
          {"scenario", s.scenario},
          {"median_us", s.median_us},
          {"repetitions", s.repetitions}};
}

}  // namespace

std::vector<JudgedPair> pairs_within(const std::vector<ResultFile>& files) {
  std::vector<std::vector<Group>> groups;
  size_t count = 0;
  for (const ResultFile& file : files)
    for (const Group& g : groups.emplace_back(make_groups({file}))) count += g.cells.size() * (g.cells.size() - 1) / 2;
  if (count > kMaxPairs)
    fail("--pairs: " + std::to_string(count) + " pairs of cells in these files' groups, more than " +
         std::to_string(kMaxPairs) + "; give fewer files, or files of fewer strategies and scenarios");
  std::vector<JudgedPair> out;
  out.reserve(count);
  for (size_t f = 0; f < files.size(); ++f) {
    const ResultFile& file = files[f];
    for (const Group& g : groups[f]) {
      const std::string group = g.device_label + ", " + g.model_text() + ", batch " + std::to_string(g.batch);
      for (auto i = g.cells.begin(); i != g.cells.end(); ++i)
        for (auto j = std::next(i); j != g.cells.end(); ++j)
          out.push_back({file.path, group, side(i->second, i->first.first, i->first.second),
                         side(j->second, j->first.first, j->first.second), judge(i->second, j->second)});
    }
  }
  return out;
}

std::vector<JudgedPair> pairs_across(const ResultFile& a, const ResultFile& b) {
  std::map<std::string, const Series*> in_b;
  for (const Series& s : b.series)
    if (!s.primitive && !s.times_us.empty()) in_b[s.name] = &s;
  std::vector<JudgedPair> out;
  for (const Series& s : a.series) {
    const auto it = in_b.find(s.name);
    if (s.primitive || s.times_us.empty() || it == in_b.end()) continue;
    Cell first = make_cell(s.times_us), second = make_cell(it->second->times_us);
    first.name = second.name = s.name;
    second.file = 1;  // two runs: two processes, timed in lockstep or apart
    first.interleaved = a.interleaved();
    second.interleaved = b.interleaved();
    first.lockstep = a.lockstep();
    second.lockstep = b.lockstep();
    first.lockstep_allowance = a.lockstep_allowance();
    second.lockstep_allowance = b.lockstep_allowance();
    const std::string group =
        a.device_label(s.device) + ", " + model_text(s.model) + ", batch " + std::to_string(s.batch);
    out.push_back({a.path, group, side(first, s.strategy_key(), s.scenario), side(second, s.strategy_key(), s.scenario),
                   judge(first, second)});
  }
  return out;
}

nlohmann::json pairs_summary(const std::vector<JudgedPair>& pairs) {
  size_t faster = 0;
  double drift = 1, medians = 1;
  for (const JudgedPair& p : pairs) {
    const Judgement& j = p.judgement;
    faster += j.standing == Standing::faster;
    if (j.ratio.bounded()) drift = std::max(drift, j.ratio.low);
    if (std::isfinite(j.ratio.median) && j.ratio.median > 0)
      medians = std::max({medians, j.ratio.median, 1 / j.ratio.median});
  }
  return {{"pairs", pairs.size()}, {"faster", faster}, {"drift_shown", drift}, {"largest_median_ratio", medians}};
}

namespace {

nlohmann::json pair_json(const JudgedPair& p) {
  const Judgement& j = p.judgement;
  return {{"file", p.file},
          {"group", p.group},
          {"a", side_json(p.a)},
          {"b", side_json(p.b)},
          {"fast", j.first_faster ? "a" : "b"},
          {"low", j.ratio.bounded() ? nlohmann::json(j.ratio.low) : nlohmann::json()},
          {"high", j.ratio.bounded() ? number_or_null(j.ratio.high) : nlohmann::json()},
          {"median_ratio", number_or_null(j.ratio.median)},
          {"k", j.ratio.k},
          {"confidence", j.confidence},
          {"drift", j.drift},
          {"standing", to_string(j.standing)},
          {"factor", j.factor},
          {"detectable", number_or_null(j.detectable)},
          {"cannot_exclude", number_or_null(j.cannot_exclude)},
          {"outliers", j.outliers}};
}

}  // namespace

void write_pairs_json(std::ostream& out, const std::vector<JudgedPair>& pairs) {
  out << "{\"pairs\":[";
  for (size_t i = 0; i < pairs.size(); ++i) out << (i ? "," : "") << pair_json(pairs[i]).dump();
  out << "],\"summary\":" << pairs_summary(pairs).dump() << "}\n";
}

}  // namespace condbench::report
