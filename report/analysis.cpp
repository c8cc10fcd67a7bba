#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "condbench/decoder/config.h"
#include "condbench/result_format.h"

namespace condbench::report {

namespace {

std::string percent(double fraction) {
  return std::to_string(static_cast<int>(std::floor(100 * fraction + 1e-9))) + "%";
}

}  // namespace

std::string outliers_text(size_t outliers) {
  return std::to_string(outliers) + " outlying repetition" + (outliers == 1 ? "" : "s");
}

Cell make_cell(const std::vector<double>& times_us, double unstable_cv) {
  Cell c;
  c.median_us = median(times_us);
  c.q1_us = quantile(times_us, 0.25);
  c.q3_us = quantile(times_us, 0.75);
  c.cv = coefficient_of_variation(times_us);
  c.repetitions = times_us.size();
  c.interval = median_interval(times_us);
  c.unstable = c.cv > unstable_cv;
  c.outliers = count_outliers(times_us);
  c.times_us = times_us;
  return c;
}

double drift_allowance(const Cell& a, const Cell& b) {
  return a.file == b.file && a.interleaved && b.interleaved ? 1.0 : kDriftBetweenProcesses;
}

const char* to_string(Standing standing) {
  switch (standing) {
    case Standing::faster:
      return "faster";
    case Standing::same:
      return "same";
    case Standing::ambiguous:
      return "ambiguous";
  }
  return "?";
}

double answer_confidence(const Cell& a, const Cell& b) {
  return 1.0 - (1.0 - kRatioConfidence) / static_cast<double>(std::max<size_t>({a.looks, b.looks, 1}));
}

Judgement judge(const Cell& a, const Cell& b, double min_effect) {
  Judgement j;
  j.first_faster = a.median_us <= b.median_us;
  const Cell& fast = j.first_faster ? a : b;
  const Cell& slow = j.first_faster ? b : a;
  j.confidence = answer_confidence(a, b);
  j.ratio = ratio_interval(fast.times_us, slow.times_us, j.confidence);
  j.drift = drift_allowance(a, b);
  j.outliers = a.outliers + b.outliers;
  if (!j.ratio.bounded()) return j;  // ambiguous: too few repetitions for an interval
  const double lower = j.ratio.low / j.drift, upper = j.ratio.high * j.drift;
  if (lower >= 1.0 + min_effect) {
    j.standing = Standing::faster;
    j.factor = lower;
  } else if (lower * kEquivalenceMargin >= 1.0 && upper <= kEquivalenceMargin) {
    j.standing = Standing::same;
  } else {
    j.detectable = (1.0 + min_effect) * j.drift * std::max(1.0, j.ratio.median) / j.ratio.low;
    j.cannot_exclude = std::max(upper, 1.0 / lower);
  }
  return j;
}

bool could_decide(const Judgement& j, double min_effect) {
  if (j.standing != Standing::ambiguous || !j.ratio.valid) return false;
  if (!j.ratio.bounded() || j.outliers > 0) return true;
  const double point = j.ratio.median;
  const bool may_be_faster = j.ratio.high / j.drift >= 1.0 + min_effect;
  const bool may_be_same = point * j.drift < kEquivalenceMargin && point / j.drift * kEquivalenceMargin > 1.0;
  return may_be_faster || may_be_same;
}

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

namespace {

bool interleaved(const ResultFile& file) {
  const auto it = file.context.find("condbench_interleaving");
  return it != file.context.end() && (it->second == "random" || it->second == "rounds");
}

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
  for (size_t index = 0; index < files.size(); ++index)
    for (const ResultFile& file = files[index]; const Series& s : file.series) {
      if (s.primitive || s.times_us.empty()) continue;
      const std::string label = file.device_label(s.device);
      Group& g = groups[{label, model_order(s.model), s.batch}];
      g.device_label = label;
      g.batch = s.batch;
      g.blocks = s.blocks;
      g.model = s.model;
      // A benchmark present in several files keeps the first file's numbers.
      Cell cell = make_cell(s.times_us, unstable_cv);
      cell.counters = s.counters;
      cell.file = index;
      cell.interleaved = interleaved(file);
      cell.name = s.name;
      cell.looks = looks(file);
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

std::string format_ratio(double ratio) {
  char text[32];
  if (ratio >= 10)
    std::snprintf(text, sizeof text, "%.0f×", ratio);
  else if (ratio >= 1)
    std::snprintf(text, sizeof text, "%.1f×", ratio);
  else  // slower: two significant digits, so 0.021× does not read as 0.0×
    std::snprintf(text, sizeof text, "%.2g×", ratio);
  return text;
}

std::string format_at_least(double ratio) {
  if (ratio < 1.1) return percent(ratio - 1.0);
  char text[32];
  if (ratio >= 10)
    std::snprintf(text, sizeof text, "%.0f×", std::floor(ratio + 1e-9));
  else
    std::snprintf(text, sizeof text, "%.1f×", std::floor(ratio * 10 + 1e-9) / 10);
  return text;
}

std::string scenario_phrase(const std::string& scenario) {
  if (scenario == "mix:early") return "when most rows exit early";
  if (scenario == "mix:late") return "when most rows exit late";
  if (scenario == "mix:uniform") return "when exits are spread evenly";
  if (scenario.rfind("exit:", 0) == 0) return "when every row leaves at exit " + scenario.substr(5);
  return "in " + scenario;
}

std::vector<std::string> recommendations(const std::vector<Group>& groups) {
  std::vector<std::string> sentences;
  for (const Group& g : groups) {
    // The two ends of the question: most rows leaving early, most leaving late.
    std::vector<std::string> picks;
    for (const char* s : {"mix:early", "mix:late"})
      if (std::find(g.scenarios.begin(), g.scenarios.end(), s) != g.scenarios.end()) picks.push_back(s);
    if (picks.empty() && !g.scenarios.empty()) picks = {g.scenarios.front(), g.scenarios.back()};
    for (const std::string& scenario : picks) {
      std::vector<std::pair<double, std::string>> ranked;
      for (const std::string& s : g.strategies)
        if (const Cell* c = g.cell(s, scenario)) ranked.push_back({c->median_us, s});
      if (ranked.empty()) continue;
      std::sort(ranked.begin(), ranked.end());
      const std::string& best = ranked[0].second;
      const std::string where =
          "At batch " + std::to_string(g.batch) + " (" + g.model_text() + ") on " + g.device_label + ", ";
      // Compare the winner with eager_host where it ran, else with the runner-up.
      const bool against_eager = best != kEagerHost && g.cell(kEagerHost, scenario);
      if (!against_eager && ranked.size() < 2) continue;
      const std::string other = against_eager ? kEagerHost : ranked[1].second;
      const Cell& lead = *g.cell(best, scenario);
      const Cell& second = *g.cell(other, scenario);
      const std::string phrase = scenario_phrase(scenario);

      const Judgement j = judge(lead, second);
      std::string sentence;
      if (j.standing == Standing::faster && against_eager)
        sentence = where + best + " is at least " + format_at_least(j.factor) + " faster than " + kEagerHost + " " +
                   phrase + ".";
      else if (j.standing == Standing::faster)
        sentence = where + best + " is the fastest " + phrase + ", at least " + format_at_least(j.factor) +
                   " ahead of " + other + ".";
      else
        sentence = where + "no recommendation " + phrase + ": " + verdict_text(j, best, other, lead, second) + ".";
      sentences.push_back(sentence);
    }
  }
  return sentences;
}

namespace {

// Three significant figures below 1000, whole numbers above: never an exponent.
std::string plain(double value) {
  char text[64];
  std::snprintf(text, sizeof text, std::abs(value) >= 1000 ? "%.0f" : "%.3g", value);
  return text;
}

std::string figure(const Cell& c) {
  std::string text = plain(c.median_us) + " µs [" + plain(c.interval.low) + "–" + plain(c.interval.high) + "]";
  if (c.outliers > 0) text += ", " + outliers_text(c.outliers);
  return text;
}

// x rounded to three significant figures towards -inf (up = false) or +inf, so an interval printed
// never claims more than it holds.
double three_figures(double x, bool up) {
  if (!(x > 0) || !std::isfinite(x)) return x;
  const double unit = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return (up ? std::ceil(x / unit - 1e-9) : std::floor(x / unit + 1e-9)) * unit;
}

// "99%", "99.67%": a confidence as the verdicts print it.
std::string confidence_text(double confidence) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g%%", 100 * confidence);
  return text;
}

std::string ratio_text(const RatioInterval& r) {
  // Appended piece by piece: GCC 12's -Wrestrict misreads "[" + std::string (a known false positive).
  std::string text = "[";
  text.append(plain(three_figures(r.low, false))).append("–").append(plain(three_figures(r.high, true)));
  return text.append("]×");
}

}  // namespace

std::string verdict_text(const Judgement& j, const std::string& fast, const std::string& slow, const Cell& f,
                         const Cell& s) {
  const std::string drift =
      j.drift > 1 ? ", allowing " + format_ratio(j.drift) + " for drift between separately timed cells" : "";
  switch (j.standing) {
    case Standing::faster:
      return fast + " is at least " + format_at_least(j.factor) + " faster than " + slow + " (ratio " +
             ratio_text(j.ratio) + drift + ")";
    case Standing::same:
      return fast + " and " + slow + " are the same within " + format_ratio(kEquivalenceMargin) +
             ": the interval of their ratio, " + ratio_text(j.ratio) + ", lies inside that margin of sameness";
    case Standing::ambiguous:
      break;
  }
  const std::string between = "ambiguous between " + fast + " and " + slow + ": ";
  if (!j.ratio.valid) return between + "a repetition's time is zero, negative or not a number";
  if (!j.ratio.bounded())
    return between + std::to_string(f.repetitions) + " and " + std::to_string(s.repetitions) +
           " repetitions are too few for a " + confidence_text(j.confidence) + " interval of their ratio";
  const std::string outliers = j.outliers > 0 ? "; " + outliers_text(j.outliers) + " in the two cells" : "";
  const std::string limits = " (it would have called " + plain(j.detectable) + "× or more, and cannot exclude up to " +
                             format_ratio(j.cannot_exclude) + outliers + ")";
  if (j.ratio.low <= 1.0 && 1.0 <= j.ratio.high)
    return between + "the ratio " + ratio_text(j.ratio) + " holds 1 but reaches past the " +
           format_ratio(kEquivalenceMargin) + " margin of sameness" + drift + limits;
  return between + "the ratio " + ratio_text(j.ratio) + " is below what this data can call" + drift + limits;
}

namespace {

// The verdict between a and b in words, with the medians and intervals it rests on: "A (m µs
// [lo–hi]) is at least R× faster than B (…)", "A (…) and B (…) take the same time: …", or ambiguous and why.
std::string claim(const Group& g, const std::string& a, const std::string& b, const std::string& scenario) {
  const Judgement j = judge(*g.cell(a, scenario), *g.cell(b, scenario));
  const std::string& fast = j.first_faster ? a : b;
  const std::string& slow = j.first_faster ? b : a;
  const Cell& f = *g.cell(fast, scenario);
  const Cell& s = *g.cell(slow, scenario);
  return verdict_text(j, fast + " (" + figure(f) + ")", slow + " (" + figure(s) + ")", f, s);
}

}  // namespace

std::vector<std::string> by_median(const Group& g, const std::vector<std::string>& names, const std::string& scenario) {
  std::vector<std::pair<double, std::string>> ranked;
  for (const std::string& s : names)
    if (const Cell* c = g.cell(s, scenario)) ranked.push_back({c->median_us, s});
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (const auto& r : ranked) out.push_back(r.second);
  return out;
}

bool is_pytorch_option(const std::string& strategy) {
  return strategy.rfind("python/", 0) == 0 || strategy.rfind("aoti/", 0) == 0;
}

std::vector<std::string> pytorch_options(const Group& g) {
  std::vector<std::string> out;
  for (const std::string& s : g.strategies)
    if (is_pytorch_option(s)) out.push_back(s);
  return out;
}

bool decodes(const Group& g) {
  for (const BenchmarkName::Part& p : g.model)
    if (p.key == "model") return p.value == kDecoderFamily;
  return false;
}

std::vector<std::string> answer_scenarios(const Group& g) {
  std::vector<std::string> out;
  for (const std::string& s : {std::string("exit:1"), "exit:" + std::to_string(g.blocks + 1)})
    if (std::find(g.scenarios.begin(), g.scenarios.end(), s) != g.scenarios.end()) out.push_back(s);
  return out;
}

namespace {

// One question the answer's sentences settle, and the pair of cells each scenario compares for it.
struct AnswerQuestion {
  std::string topic;
  std::vector<AnswerPair> pairs;
};

std::vector<AnswerQuestion> answer_questions(const Group& g) {
  std::vector<AnswerQuestion> questions;
  const std::vector<std::string> python = pytorch_options(g);
  const std::vector<std::string> scenarios = answer_scenarios(g);
  // `pick` gives the two cells a scenario compares, or nothing where it has no such pair.
  using Pair = std::optional<std::pair<std::string, std::string>>;
  const auto ask = [&](const std::string& topic, const std::function<Pair(const std::string&)>& pick) {
    AnswerQuestion q{topic, {}};
    for (const std::string& scenario : scenarios)
      if (const Pair p = pick(scenario)) q.pairs.push_back({p->first, p->second, scenario});
    if (!q.pairs.empty()) questions.push_back(std::move(q));
  };
  const auto both = [&](const std::string& a, const std::string& b) {
    return [&g, a, b](const std::string& scenario) -> Pair {
      if (!g.cell(a, scenario) || !g.cell(b, scenario)) return std::nullopt;
      return std::make_pair(a, b);
    };
  };
  const auto fastest_two = [&g](const std::vector<std::string>& options) {
    return [&g, options](const std::string& scenario) -> Pair {
      const std::vector<std::string> ranked = by_median(g, options, scenario);
      if (ranked.size() < 2) return std::nullopt;
      return std::make_pair(ranked[0], ranked[1]);
    };
  };
  if (decodes(g)) {
    const std::string where = "On " + g.device_label + " at batch " + std::to_string(g.batch) + " (" + g.model_text() +
                              "), per generated token, ";
    ask(where + "the host's if (eager_host) against masking every row (masked)", both(kEagerHost, "torch/masked"));
    ask(where + "in Python, the host's if (py_eager_if, .item() at each exit) against masking (py_masked)",
        both("python/py_eager_if", "python/py_masked"));
    ask(where + "in Python, nested torch.cond (py_cond) against the host's if (py_eager_if)",
        both("python/py_cond", "python/py_eager_if"));
    ask(where +
            "nested torch.cond exported with AOTInductor and run from C++ (aoti/cond) against torch.cond in "
            "eager mode (py_cond)",
        both("aoti/cond", "python/py_cond"));
    ask(where + "the fastest way to write it with PyTorch", fastest_two(python));
    ask(where + "the fastest way written against the host's if", [&](const std::string& scenario) -> Pair {
      const std::vector<std::string> ranked = by_median(g, g.strategies, scenario);
      if (ranked.empty() || ranked[0] == kEagerHost || !g.cell(kEagerHost, scenario)) return std::nullopt;
      return std::make_pair(ranked[0], std::string(kEagerHost));
    });
    return questions;
  }
  if (g.batch != 1 || python.empty() || scenarios.empty()) return questions;
  std::vector<std::string> others;  // what condbench itself runs
  for (const std::string& s : g.strategies)
    if (!is_pytorch_option(s)) others.push_back(s);
  ask("On " + g.device_label + " at batch 1 (" + g.model_text() + "), the fastest way to write it with PyTorch",
      fastest_two(python));
  ask("Nested torch.cond in eager mode against a plain Python if", both("python/py_cond", "python/py_eager_if"));
  // torch.cond as deployed: exported, compiled by AOTInductor, run from C++ — against eager.
  // AOTInductor lowers each torch.cond to a read of its predicate and a C++ if (through torch 2.15 at
  // least; upstream's CUDA-graph work lists torch.cond as host-side control flow): the sentence says so.
  ask("Nested torch.cond exported with AOTInductor and run from C++ (which still decides each level on the host) "
      "against torch.cond in eager mode",
      both("aoti/cond", "python/py_cond"));
  ask("condbench's fastest strategy against the best PyTorch option", [&](const std::string& scenario) -> Pair {
    const std::vector<std::string> ours = by_median(g, others, scenario);
    const std::vector<std::string> theirs = by_median(g, python, scenario);
    if (ours.empty() || theirs.empty()) return std::nullopt;
    return std::make_pair(ours[0], theirs[0]);
  });
  return questions;
}

}  // namespace

std::vector<std::string> answer_sentences(const Group& g) {
  // One sentence per question, each scenario a clause: "TOPIC: when …, CLAIM; when …, CLAIM."
  std::vector<std::string> sentences;
  for (const AnswerQuestion& q : answer_questions(g)) {
    std::string clauses;
    for (const AnswerPair& p : q.pairs)
      clauses += (clauses.empty() ? "" : "; ") + scenario_phrase(p.scenario) + ", " + claim(g, p.a, p.b, p.scenario);
    sentences.push_back(q.topic + ": " + clauses + ".");
  }
  return sentences;
}

std::optional<AnswerTable> answer_table(const Group& g) {
  AnswerTable t;
  t.scenarios = answer_scenarios(g);
  // A decoder's options are every way the run wrote it, at every batch (design.md §8).
  t.rows = decodes(g) ? g.strategies : pytorch_options(g);
  if ((g.batch != 1 && !decodes(g)) || t.rows.empty() || t.scenarios.empty()) return std::nullopt;
  // condbench's: its fastest strategy in every scenario (the sentences compare each scenario's
  // fastest; usually one strategy), and eager_host, what the Python if becomes in C++
  std::vector<std::string> own;
  for (const std::string& s : g.strategies)
    if (!is_pytorch_option(s)) own.push_back(s);
  for (const std::string& sc : t.scenarios) {
    const std::vector<std::string> ranked = by_median(g, own, sc);
    if (ranked.empty()) continue;
    if (t.own_fastest.empty()) t.own_fastest = ranked[0];
    if (std::find(t.rows.begin(), t.rows.end(), ranked[0]) == t.rows.end()) t.rows.push_back(ranked[0]);
  }
  if (g.cell(kEagerHost, t.scenarios[0]) && std::find(t.rows.begin(), t.rows.end(), kEagerHost) == t.rows.end())
    t.rows.push_back(kEagerHost);
  std::sort(t.rows.begin(), t.rows.end(), [&](const std::string& a, const std::string& b) {
    const Cell *ca = g.cell(a, t.scenarios[0]), *cb = g.cell(b, t.scenarios[0]);
    return (ca ? ca->median_us : INFINITY) < (cb ? cb->median_us : INFINITY);
  });
  for (const std::string& sc : t.scenarios) {
    const std::vector<std::string> ranked = by_median(g, t.rows, sc);
    t.best.push_back(ranked.empty() ? std::string() : ranked[0]);
  }
  return t;
}

std::vector<AnswerPair> answer_pairs(const Group& g) {
  std::vector<AnswerPair> pairs;
  std::set<std::tuple<std::string, std::string, std::string>> seen;  // (scenario, lower name, higher name)
  const auto add = [&](const std::string& a, const std::string& b, const std::string& scenario) {
    if (a == b || !g.cell(a, scenario) || !g.cell(b, scenario)) return;
    if (seen.insert({scenario, std::min(a, b), std::max(a, b)}).second) pairs.push_back({a, b, scenario});
  };
  if (const std::optional<AnswerTable> t = answer_table(g))
    for (size_t i = 0; i < t->scenarios.size(); ++i)
      for (const std::string& row : t->rows) add(t->best[i], row, t->scenarios[i]);
  for (const AnswerQuestion& q : answer_questions(g))
    for (const AnswerPair& p : q.pairs) add(p.a, p.b, p.scenario);
  return pairs;
}

std::vector<std::string> undecided_cells(const std::vector<Group>& groups, size_t file, size_t* undecided) {
  std::set<std::string> names;
  size_t count = 0;
  std::vector<std::pair<const Cell*, const Cell*>> within;  // the answer's pairs with both cells in `file`
  for (const Group& g : groups)
    for (const AnswerPair& p : answer_pairs(g)) {
      const Cell& a = *g.cell(p.a, p.scenario);
      const Cell& b = *g.cell(p.b, p.scenario);
      if (a.file == file && b.file == file) within.push_back({&a, &b});
      if ((a.file != file && b.file != file) || !could_decide(judge(a, b))) continue;
      ++count;
      for (const Cell* c : {&a, &b})
        if (c->file == file) names.insert(c->name);
    }
  // Two cells of one interleaved run are judged with no drift allowance because they saw the machine
  // alike; a cell that gets rounds would see it longer than a partner that does not. So every cell
  // compared with one that runs again runs again too, within the file.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [a, b] : within)
      if (names.count(a->name) != names.count(b->name)) {
        names.insert(a->name);
        names.insert(b->name);
        grew = true;
      }
  }
  if (undecided) *undecided = count;
  return {names.begin(), names.end()};
}

std::vector<std::string> cells_for_next_rounds(std::vector<ResultFile> files, size_t* undecided) {
  if (files.empty()) return {};
  files.back().context[kAnswerLooksContext] = std::to_string(kAnswerLooks);
  return undecided_cells(make_groups(files), files.size() - 1, undecided);
}

std::string conditional_graphs_sentence(const std::vector<Group>& groups) {
  std::vector<std::string> said;
  for (const Group& g : groups) {
    if (g.device_label.rfind("cuda", 0) != 0 || !g.cell(kEagerHost, "mix:uniform")) continue;
    for (const char* graph : {"torch/graph_cond", "native/graph_cond", "python/py_cond_cudagraph"})
      if (g.cell(graph, "mix:uniform")) {
        const bool graph_first = g.cell(graph, "mix:uniform")->median_us < g.cell(kEagerHost, "mix:uniform")->median_us;
        said.push_back(
            "at batch " + std::to_string(g.batch) + " (" + g.model_text() + ") on " + g.device_label + ", " +
            (graph_first ? claim(g, graph, kEagerHost, "mix:uniform") : claim(g, kEagerHost, graph, "mix:uniform")));
      }
  }
  if (said.empty())
    return "Whether conditional graphs are impossible is unmeasured here: this run has no GPU figures for a graph "
           "with conditional nodes (graph_cond, py_cond_cudagraph) beside eager_host.";
  std::string text =
      "Conditional graphs run, deciding on the device with no host round trip, when exits are spread "
      "evenly: ";
  for (size_t i = 0; i < said.size(); ++i) text += (i ? "; " : "") + said[i];
  return text + ".";
}

std::string round_trip_sentence(const std::map<std::string, std::map<std::string, double>>& primitive_floors) {
  std::vector<std::string> said;
  for (const auto& [device, prims] : primitive_floors) {
    const auto read = prims.find("read4_pinned_sync");
    const auto sync = prims.find("launch_sync");
    if (read == prims.end()) continue;
    std::string line = "on " + device + ", reading one exit test back to the host costs " + plain(read->second) +
                       " µs (read4_pinned_sync)";
    if (sync != prims.end())
      line += ", against " + plain(sync->second) + " µs for a launch and its synchronisation (launch_sync)";
    said.push_back(line);
  }
  if (said.empty())
    return "What one exit test's round trip to the host costs is unmeasured here: this run has no CUDA primitives "
           "(on the CPU the decision is a branch in host code, no round trip).";
  std::string text = "The host round trip each exit test pays when decided on the host: ";
  for (size_t i = 0; i < said.size(); ++i) text += (i ? "; " : "") + said[i];
  return text + " (medians of this run's primitives).";
}

std::map<std::string, std::map<std::string, double>> primitive_floors(const std::vector<ResultFile>& files) {
  std::map<std::string, std::map<std::string, double>> floors;
  for (const ResultFile& file : files)
    for (const Series& s : file.series)
      if (s.primitive && !s.times_us.empty())
        floors[file.device_label(s.device)].emplace(s.primitive_name, median(s.times_us));
  return floors;
}

std::optional<double> CpuLimits::read_rate(double bytes) const {
  if (read.empty()) return std::nullopt;
  const Read* largest_no_larger = &read.front();  // `read` is sorted by size
  for (const Read& r : read)
    if (r.bytes <= bytes) largest_no_larger = &r;
  return largest_no_larger->bytes_per_us;
}

std::map<std::string, CpuLimits> cpu_limits(const std::vector<ResultFile>& files) {
  std::map<std::string, CpuLimits> limits;
  for (const ResultFile& file : files)
    for (const Series& s : file.series) {
      if (!s.primitive || s.device != "cpu" || s.times_us.empty()) continue;
      const double us = median(s.times_us);
      if (!(us > 0)) continue;
      const auto counter = [&](const char* key) {
        const auto it = s.counters.find(key);
        return it != s.counters.end() && it->second > 0 ? std::optional<double>(it->second) : std::nullopt;
      };
      CpuLimits& l = limits[file.device_label(s.device)];
      if (s.primitive_name.rfind("read_bandwidth_", 0) == 0 && counter("bytes")) {
        // One rate per buffer size: two files of one machine keep the faster (a floor stays a floor,
        // and the order the files came in changes nothing).
        const double bytes = *counter("bytes"), rate = bytes / us;
        const auto same = std::find_if(l.read.begin(), l.read.end(), [&](const auto& r) { return r.bytes == bytes; });
        if (same != l.read.end()) {
          same->bytes_per_us = std::max(same->bytes_per_us, rate);
          continue;
        }
        l.read.push_back({s.primitive_name, bytes, rate});
        std::sort(l.read.begin(), l.read.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
      } else if (s.primitive_name == "fma_peak" && counter("flops")) {
        l.flops_per_us = *counter("flops") / us;
      } else if (s.primitive_name == "torch_op") {
        l.torch_op_us = us;
      }
    }
  return limits;
}

const char* Floor::bound() const {
  if (calls_us > std::max(memory_us, compute_us)) return "calls";
  return memory_us >= compute_us ? "memory" : "compute";
}

std::optional<Floor> floor_of(const CpuLimits& limits, const Cell& cell, const std::string& engine) {
  const auto bytes = cell.counters.find("bytes_read"), flops = cell.counters.find("flops_executed");
  if (bytes == cell.counters.end() || flops == cell.counters.end() || !limits.flops_per_us) return std::nullopt;
  const std::optional<double> rate = limits.read_rate(bytes->second);
  if (!rate) return std::nullopt;
  Floor f;
  f.memory_us = bytes->second / *rate;
  f.compute_us = flops->second / *limits.flops_per_us;
  if (engine == "torch") {
    const auto launches = cell.counters.find("launches");
    if (!limits.torch_op_us || launches == cell.counters.end()) return std::nullopt;
    f.calls_us = launches->second * *limits.torch_op_us;
  }
  f.us = std::max(f.memory_us, f.compute_us) + f.calls_us;
  // Counters from another machine's file can be anything JSON holds: no floor rather than 0 or inf.
  if (!(f.us > 0) || !std::isfinite(f.us)) return std::nullopt;
  return f;
}

}  // namespace condbench::report
