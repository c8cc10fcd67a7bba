#include "condbench/scenario.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <string>

#include "condbench/error.h"
#include "condbench/exit_math.h"

namespace condbench {

namespace {

const char* const kMixShapes[] = {"early", "uniform", "late"};

// docs/design.md §3, for a 3-block model (4 exits).
std::array<double, 4> base_shape(const std::string& shape) {
  if (shape == "early") return {0.70, 0.20, 0.05, 0.05};
  if (shape == "uniform") return {0.25, 0.25, 0.25, 0.25};
  if (shape == "late") return {0.05, 0.05, 0.20, 0.70};
  fail("unknown mix shape '" + printable(shape) + "' (expected early, uniform or late)");
}

// Shares -> row counts that sum to rows exactly (largest remainder).
std::vector<int> target_counts(const std::vector<double>& shares, int rows) {
  std::vector<int> counts(shares.size());
  std::vector<std::pair<double, size_t>> remainders;
  int assigned = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    const double exact = shares[k] * rows;
    counts[k] = static_cast<int>(std::floor(exact));
    assigned += counts[k];
    remainders.push_back({exact - counts[k], k});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; assigned < rows; ++i, ++assigned) ++counts[remainders[i].second];
  return counts;
}

bool parse_int(const std::string& text, int& value) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  value = std::stoi(text);
  return true;
}

}  // namespace

Scenario Scenario::forced(int exit_id) {
  if (exit_id < 1) fail("scenario exit:" + std::to_string(exit_id) + ": exits are numbered from 1");
  Scenario s;
  s.kind_ = ScenarioKind::forced_exit;
  s.forced_exit_ = exit_id;
  return s;
}

Scenario Scenario::mix(const std::string& shape) {
  if (std::find(std::begin(kMixShapes), std::end(kMixShapes), shape) == std::end(kMixShapes))
    fail("scenario 'mix:" + shape + "': unknown mix (expected mix:early, mix:uniform or mix:late)");
  Scenario s;
  s.kind_ = ScenarioKind::mix;
  s.shape_ = shape;
  return s;
}

Scenario Scenario::parse(const std::string& text) {
  if (text.rfind("exit:", 0) == 0) {
    int k = 0;
    if (!parse_int(text.substr(5), k) || k < 1) fail("scenario '" + printable(text) + "': exit:K needs a whole K >= 1");
    return forced(k);
  }
  if (text.rfind("mix:", 0) == 0) return mix(text.substr(4));
  fail("unknown scenario '" + printable(text) + "' (expected exit:K or mix:early|uniform|late)");
}

std::vector<double> Scenario::target_shares(int blocks) const {
  if (kind_ != ScenarioKind::mix) fail("scenario " + str() + " forces its exit: it has no target shares");
  return mix_target_shares(shape_, blocks + 1);
}

std::string Scenario::str() const {
  return kind_ == ScenarioKind::mix ? "mix:" + shape_ : "exit:" + std::to_string(forced_exit_);
}

std::vector<Scenario> all_scenarios(int blocks) {
  std::vector<Scenario> out;
  for (int k = 1; k <= blocks + 1; ++k) out.push_back(Scenario::forced(k));
  for (const char* shape : kMixShapes) out.push_back(Scenario::mix(shape));
  return out;
}

std::vector<double> mix_target_shares(const std::string& shape, int num_exits) {
  const std::array<double, 4> base = base_shape(shape);
  std::vector<double> shares(num_exits, 0.0);
  for (int j = 0; j < num_exits; ++j) {
    const double lo = static_cast<double>(j) / num_exits, hi = static_cast<double>(j + 1) / num_exits;
    for (int p = 0; p < 4; ++p) {
      const double overlap = std::min(hi, (p + 1) / 4.0) - std::max(lo, p / 4.0);
      if (overlap > 0) shares[j] += base[p] * 4.0 * overlap;
    }
  }
  return shares;
}

std::vector<float> forced_thresholds(int blocks, int exit_id) {
  std::vector<float> thresholds(blocks, 1.0f);
  if (exit_id <= blocks) thresholds[exit_id - 1] = 0.0f;
  return thresholds;
}

std::vector<float> calibrate_thresholds(const std::vector<float>& confidences, int rows, int blocks,
                                        const std::vector<double>& target_shares) {
  if (static_cast<int>(target_shares.size()) != blocks + 1) fail("calibration: need one target share per exit");
  // std::sort needs a strict weak order, which NaN breaks: refuse before sorting.
  for (float c : confidences)
    if (!std::isfinite(c)) fail("calibration: a confidence is NaN or infinite (non-finite weights or inputs)");
  const std::vector<int> counts = target_counts(target_shares, rows);
  std::vector<int> remaining(rows);
  std::iota(remaining.begin(), remaining.end(), 0);
  std::vector<float> thresholds(blocks);
  std::vector<float> conf;
  for (int k = 0; k < blocks; ++k) {
    const int want = counts[k];
    conf.clear();
    for (int r : remaining) conf.push_back(confidences[static_cast<size_t>(r) * blocks + k]);
    std::sort(conf.begin(), conf.end(), std::greater<float>());
    const int n = static_cast<int>(conf.size());
    if (want <= 0 || n == 0) {
      thresholds[k] = 1.0f;  // max softmax never exceeds 1
    } else if (want >= n) {
      thresholds[k] = 0.0f;  // max softmax is always > 0
    } else {
      // Strictly between two neighbouring confidences: exactly `cut` rows fire. The cut may move
      // up to half a percent of the rows from the target rank to where the neighbours are
      // farthest apart, so that no row sits within rounding of its threshold and every strategy,
      // whatever its summation order, takes the same decision.
      const int window = std::max(1, n / 200);
      int cut = want;
      for (int c = std::max(1, want - window); c <= std::min(n - 1, want + window); ++c)
        if (conf[c - 1] - conf[c] > conf[cut - 1] - conf[cut]) cut = c;
      thresholds[k] = static_cast<float>(0.5 * (static_cast<double>(conf[cut - 1]) + conf[cut]));
    }
    std::vector<int> still;
    for (int r : remaining)
      if (!math::exit_fires(confidences[static_cast<size_t>(r) * blocks + k], thresholds[k])) still.push_back(r);
    remaining.swap(still);
  }
  return thresholds;
}

std::vector<int64_t> interleaved_order(const std::vector<int>& exits, int num_exits) {
  std::vector<std::vector<int64_t>> rows_of(num_exits);
  for (size_t r = 0; r < exits.size(); ++r) rows_of[exits[r] - 1].push_back(static_cast<int64_t>(r));
  const int64_t total = static_cast<int64_t>(exits.size());
  std::vector<size_t> taken(num_exits, 0);
  std::vector<int64_t> order;
  order.reserve(exits.size());
  for (int64_t position = 1; position <= total; ++position) {
    int pick = -1;
    int64_t deficit = INT64_MIN;
    for (int k = 0; k < num_exits; ++k) {
      if (taken[k] == rows_of[k].size()) continue;
      // (share * position - taken) * total, in integers so that ties go to the lower exit
      const int64_t d = static_cast<int64_t>(rows_of[k].size()) * position - static_cast<int64_t>(taken[k]) * total;
      if (d > deficit) {
        deficit = d;
        pick = k;
      }
    }
    order.push_back(rows_of[pick][taken[pick]++]);
  }
  return order;
}

std::vector<int> exits_for(const std::vector<float>& confidences, int rows, int blocks,
                           const std::vector<float>& thresholds) {
  std::vector<int> exits(rows, blocks + 1);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < blocks; ++k)
      if (math::exit_fires(confidences[static_cast<size_t>(r) * blocks + k], thresholds[k])) {
        exits[r] = k + 1;
        break;
      }
  return exits;
}

const std::vector<float>& ScenarioThresholds::operator()(const Scenario& scenario) const {
  if (!scenario.fits(blocks_))
    fail("scenario '" + scenario.str() + "': exit must be 1.." + std::to_string(blocks_ + 1) + ": the model has " +
         std::to_string(blocks_ + 1) + " exits");
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = made_.find(scenario.str());
  if (it != made_.end()) return it->second;
  std::vector<float> t;
  if (scenario.kind() == ScenarioKind::forced_exit) {
    t = forced_thresholds(blocks_, scenario.forced_exit());
  } else {
    if (scored_.empty()) scored_ = scores_();
    t = calibrate_thresholds(scored_, static_cast<int>(scored_.size() / blocks_), blocks_,
                             scenario.target_shares(blocks_));
  }
  return made_.emplace(scenario.str(), std::move(t)).first->second;
}

}  // namespace condbench
