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

#include "condbench/result_format.h"

namespace condbench::report {

std::vector<Recommendation> recommendations(const std::vector<Group>& groups) {
  std::vector<Recommendation> out;
  for (const Group& g : groups) {
    // The two ends of the question: most rows leaving early, most leaving late.
    std::vector<std::string> picks;
    for (const char* s : {"mix:early", "mix:late"})
      if (std::find(g.scenarios.begin(), g.scenarios.end(), s) != g.scenarios.end()) picks.push_back(s);
    if (picks.empty() && !g.scenarios.empty()) picks = {g.scenarios.front(), g.scenarios.back()};
    for (const std::string& scenario : picks) {
      const std::vector<std::string> ranked = by_median(g, g.strategies, scenario);
      if (ranked.empty()) continue;
      // Compare the winner with eager_host where it ran, else with the runner-up.
      const bool against_eager = ranked[0] != kEagerHost && g.cell(kEagerHost, scenario);
      if (!against_eager && ranked.size() < 2) continue;
      Recommendation r{&g, scenario, ranked[0], against_eager ? kEagerHost : ranked[1], {}};
      r.judgement = judge(*g.cell(r.best, scenario), *g.cell(r.other, scenario));
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::string explain(const Group& g, const std::string& a, const std::string& b, const std::string& scenario) {
  const Judgement j = judge(*g.cell(a, scenario), *g.cell(b, scenario));
  const std::string& fast = j.first_faster ? a : b;
  const std::string& slow = j.first_faster ? b : a;
  const Cell& f = *g.cell(fast, scenario);
  const Cell& s = *g.cell(slow, scenario);
  return verdict_text(j, fast + " (" + cell_figure(f) + ")", slow + " (" + cell_figure(s) + ")", f, s);
}

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

std::vector<std::string> answer_scenarios(const Group& g) {
  std::vector<std::string> out;
  for (const std::string& s :
       {std::string("exit:1"), "exit:" + std::to_string(g.blocks + 1), std::string("mix:uniform")})
    if (std::find(g.scenarios.begin(), g.scenarios.end(), s) != g.scenarios.end()) out.push_back(s);
  return out;
}

namespace {

// One question the answer asks, and the pair of cells each scenario compares for it.
struct AnswerQuestion {
  std::string label, topic;
  bool fixed = true;
  std::vector<AnswerPair> pairs;  // a first: the side its status is told from
};

bool on_gpu(const Group& g) { return g.device_label.rfind("cuda", 0) == 0; }

// How a question picks its two cells in a scenario.
enum class Pick {
  pair,            // a against b, where both ran
  fastest_two,     // the two fastest PyTorch options
  ours_vs_theirs,  // condbench's fastest against the fastest PyTorch option
  best_vs_eager,   // the fastest of all against eager_host
};
// Which groups a question is asked of.
enum class Asked { batch_one, per_token, gpu };

// The answer's questions, as data: each asked of some groups, its row's label, the question in words,
// and how it picks its cells.
struct QuestionSpec {
  Asked asked;
  const char* label;
  const char* topic;
  Pick pick;
  const char* a = "";
  const char* b = "";
};
const QuestionSpec kQuestions[] = {
    {Asked::batch_one, "fastest with PyTorch", "the fastest way to write it with PyTorch", Pick::fastest_two},
    {Asked::batch_one, "Python if vs nested torch.cond", "a plain Python if against nested torch.cond in eager mode",
     Pick::pair, "python/py_eager_if", "python/py_cond"},
    {Asked::batch_one, "torch.cond: AOTInductor vs eager",
     "nested torch.cond exported with AOTInductor and run from C++ (which still decides each level on the host) "
     "against torch.cond in eager mode",
     Pick::pair, "aoti/cond", "python/py_cond"},
    {Asked::batch_one, "condbench's fastest vs PyTorch's",
     "condbench's fastest strategy against the best PyTorch option", Pick::ours_vs_theirs},
    {Asked::per_token, "host's if vs masking", "per generated token, the host's if (eager_host) against masking",
     Pick::pair, kEagerHost, "torch/masked"},
    {Asked::per_token, "Python if vs masking",
     "per token in Python, the host's if (.item() at each exit) against masking", Pick::pair, "python/py_eager_if",
     "python/py_masked"},
    {Asked::per_token, "Python if vs nested torch.cond", "per token in Python, the host's if against nested torch.cond",
     Pick::pair, "python/py_eager_if", "python/py_cond"},
    {Asked::per_token, "torch.cond: AOTInductor vs eager",
     "per token, nested torch.cond exported with AOTInductor and run from C++ against torch.cond in eager mode",
     Pick::pair, "aoti/cond", "python/py_cond"},
    {Asked::per_token, "fastest with PyTorch", "per token, the fastest way to write it with PyTorch",
     Pick::fastest_two},
    {Asked::per_token, "fastest vs the host's if", "per token, the fastest way written against the host's if",
     Pick::best_vs_eager},
    {Asked::gpu, "IF nodes vs masking",
     "one CUDA graph of nested IF nodes against one CUDA graph that masks, both with LibTorch's kernels", Pick::pair,
     "torch/graph_cond", "torch/masked_graph"},
    {Asked::gpu, "device decides vs host decides",
     "the exit decided on the device, in a CUDA graph's IF nodes, against the host reading every exit test back",
     Pick::pair, "torch/graph_cond", kEagerHost},
    {Asked::gpu, "IF nodes vs flag tests",
     "an IF node per level against kernels that test an on-device flag and return, in one graph of the same "
     "kernels",
     Pick::pair, "native/graph_cond", "native/device_flag_graph"},
    {Asked::gpu, "torch.cond in a CUDA graph vs masking",
     "torch.cond captured in a CUDA graph (IF nodes, PyTorch >= 2.12) against masking captured in one", Pick::pair,
     "python/py_cond_cudagraph", "python/py_masked_cudagraph"},
};

bool asks(Asked asked, const Group& g) {
  switch (asked) {
    case Asked::batch_one:
      return !g.per_token && g.batch == 1;
    case Asked::per_token:
      return g.per_token;
    case Asked::gpu:
      return on_gpu(g);
  }
  return false;
}

std::vector<AnswerQuestion> answer_questions(const Group& g) {
  std::vector<AnswerQuestion> questions;
  const std::vector<std::string> python = pytorch_options(g);
  std::vector<std::string> ours;  // what condbench itself runs
  for (const std::string& s : g.strategies)
    if (!is_pytorch_option(s)) ours.push_back(s);
  using Pair = std::optional<std::pair<std::string, std::string>>;
  const auto pick = [&](const QuestionSpec& q, const std::string& scenario) -> Pair {
    switch (q.pick) {
      case Pick::pair:
        if (g.cell(q.a, scenario) && g.cell(q.b, scenario)) return std::make_pair(q.a, q.b);
        return std::nullopt;
      case Pick::fastest_two: {
        const std::vector<std::string> ranked = by_median(g, python, scenario);
        if (ranked.size() < 2) return std::nullopt;
        return std::make_pair(ranked[0], ranked[1]);
      }
      case Pick::ours_vs_theirs: {
        const std::vector<std::string> mine = by_median(g, ours, scenario), theirs = by_median(g, python, scenario);
        if (mine.empty() || theirs.empty()) return std::nullopt;
        return std::make_pair(mine[0], theirs[0]);
      }
      case Pick::best_vs_eager: {
        const std::vector<std::string> ranked = by_median(g, g.strategies, scenario);
        if (ranked.empty() || ranked[0] == kEagerHost || !g.cell(kEagerHost, scenario)) return std::nullopt;
        return std::make_pair(ranked[0], std::string(kEagerHost));
      }
    }
    return std::nullopt;
  };
  // The batch-1 questions are the PyTorch user's: asked where a PyTorch option ran.
  const bool pytorch = !python.empty();
  for (const QuestionSpec& q : kQuestions) {
    if (!asks(q.asked, g) || (q.asked == Asked::batch_one && !pytorch)) continue;
    AnswerQuestion question{q.label, q.topic, q.pick == Pick::pair, {}};
    for (const std::string& scenario : answer_scenarios(g))
      if (const Pair p = pick(q, scenario)) question.pairs.push_back({p->first, p->second, scenario});
    if (!question.pairs.empty()) questions.push_back(std::move(question));
  }
  return questions;
}

}  // namespace

std::vector<AnswerRow> answer_rows(const Group& g) {
  std::vector<AnswerRow> rows;
  for (const AnswerQuestion& q : answer_questions(g)) {
    AnswerRow row{q.label, q.topic, q.fixed, {}};
    for (const AnswerPair& p : q.pairs)
      row.verdicts.push_back({p.scenario, p.a, p.b, judge(*g.cell(p.a, p.scenario), *g.cell(p.b, p.scenario))});
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<AnswerTable> answer_table(const Group& g) {
  AnswerTable t;
  for (const std::string& sc : answer_scenarios(g))  // the two ends; the mix is the verdict table's
    if (sc.rfind("exit:", 0) == 0) t.scenarios.push_back(sc);
  // A decoder's options are every way the run wrote it, at every batch (design.md §8).
  t.rows = g.per_token ? g.strategies : pytorch_options(g);
  if ((g.batch != 1 && !g.per_token) || t.rows.empty() || t.scenarios.empty()) return std::nullopt;
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

}  // namespace condbench::report
