// The answer: which of the PyTorch user's options wins each group, in sentences and a table; the
// pairs it rests on, the cells an answer budget's next rounds need, and the recommendations.
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

// The verdict between a and b in words, with the medians and intervals it rests on: "A (m µs
// [lo–hi]) is at least R× faster than B (…)", "A (…) and B (…) take the same time: …", or ambiguous and why.
std::string claim(const Group& g, const std::string& a, const std::string& b, const std::string& scenario) {
  const Judgement j = judge(*g.cell(a, scenario), *g.cell(b, scenario));
  const std::string& fast = j.first_faster ? a : b;
  const std::string& slow = j.first_faster ? b : a;
  const Cell& f = *g.cell(fast, scenario);
  const Cell& s = *g.cell(slow, scenario);
  return verdict_text(j, fast + " (" + cell_figure(f) + ")", slow + " (" + cell_figure(s) + ")", f, s);
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

size_t rounds_before_next_look(size_t look, size_t first_repetitions) {
  return std::max<size_t>(first_repetitions, 1) << (look - 1);
}

std::string BudgetSpent::text() const {
  std::ostringstream out;
  out.precision(3);
  if (undecided_at_start == 0) return "every comparison of the answer was decided by the run's own repetitions";
  if (rounds == 0) {
    out << undecided_at_start << " comparisons of the answer undecided; no round fitted the budget";
    return out.str();
  }
  out << rounds << (rounds == 1 ? " round" : " rounds") << " over " << cells << " cells in " << seconds << " s, "
      << looks << " looks (verdicts at " << 100 * look_confidence(kAnswerLooks) << "%): " << undecided_at_start
      << " comparisons undecided before, " << undecided_at_end << " after";
  return out.str();
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

}  // namespace condbench::report
