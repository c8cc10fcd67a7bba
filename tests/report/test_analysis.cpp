// condbench-report's analysis (report/verdicts.cpp, groups.cpp, answer.cpp, wording.cpp): tables, winners and the
// generated sentences from the small fixture; claims at the conservative edge of a ratio; the answer and its budget.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis.h"
#include "report_test_support.h"
#include "result_file.h"
#include "statistics.h"

namespace condbench::report {
namespace {

using test_support::fixture_path;
using test_support::group_of;

const std::string kFixture = fixture_path();

TEST(Analysis, TablesSpeedupsAndWinners) {
  const std::vector<Group> groups = make_groups({load_result_file(kFixture)});
  ASSERT_EQ(groups.size(), 1u);
  const Group& g = groups[0];
  EXPECT_EQ(g.device_label, "cpu · Test CPU");
  EXPECT_EQ(g.strategies, (std::vector<std::string>{"native/fused", "torch/eager_host", "torch/masked"}));
  EXPECT_EQ(g.scenarios, (std::vector<std::string>{"mix:early", "mix:late"}));
  EXPECT_DOUBLE_EQ(g.cell("torch/eager_host", "mix:early")->median_us, 11.0);
  EXPECT_DOUBLE_EQ(g.cell("native/fused", "mix:early")->median_us, 1.5);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("native/fused", "mix:early"), 11.0 / 1.5);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("torch/masked", "mix:early"), 11.0 / 21.0);
  EXPECT_DOUBLE_EQ(*g.speedup_over_eager("native/fused", "mix:late"), 6.0);

  const std::vector<Winner> winners = best_strategies(groups);
  ASSERT_EQ(winners.size(), 2u);
  EXPECT_EQ(winners[0].scenario, "mix:early");
  EXPECT_EQ(winners[0].strategy, "native/fused");
  EXPECT_EQ(winners[0].runner_up, "torch/eager_host");
  // 3 and 3 repetitions cannot reach a 99% interval of a ratio (even a complete separation has
  // probability 1/20 under the null): no margin, and the others are not separated from the winner.
  EXPECT_DOUBLE_EQ(winners[0].margin, 0.0);
  EXPECT_EQ(winners[0].ambiguous, (std::vector<std::string>{"torch/eager_host", "torch/masked"}));
  EXPECT_TRUE(winners[0].same.empty());
  EXPECT_DOUBLE_EQ(winners[0].interval.low, 1.0);
  EXPECT_DOUBLE_EQ(winners[0].interval.high, 2.0);
  EXPECT_DOUBLE_EQ(winners[0].interval.confidence, 0.75);
  EXPECT_TRUE(winners[0].unstable);  // 1, 1.5, 2: cv 33%, a label
  EXPECT_EQ(winners[1].strategy, "native/fused");
  EXPECT_EQ(winners[1].runner_up, "torch/masked");
  EXPECT_DOUBLE_EQ(winners[1].margin, 0.0);
}

// A recommendation as its table shows it, and its sentence (--explain's, the HTML's title).
std::vector<std::string> said(const std::vector<Recommendation>& all) {
  std::vector<std::string> out;
  for (const Recommendation& r : all)
    out.push_back(r.best + " vs " + r.other + " at " + r.scenario + ": " + status_text(r.judgement) + " · " +
                  explain(*r.group, r.best, r.other, r.scenario));
  return out;
}

// Each verdict of a group's answer: "LABEL · SCENARIO · A vs B: STATUS MARKS".
std::vector<std::string> verdicts(const Group& g) {
  std::vector<std::string> out;
  for (const AnswerRow& row : answer_rows(g))
    for (const AnswerVerdict& v : row.verdicts) {
      const std::string marks = marks_text(v.judgement, *g.cell(v.a, v.scenario), *g.cell(v.b, v.scenario), v.a, v.b);
      out.push_back(row.label + " · " + v.scenario + " · " + v.a + " vs " + v.b + ": " + status_text(v.judgement) +
                    (marks.empty() ? "" : " " + marks));
    }
  return out;
}

// The legend is printed once per report, a bullet a line: each a line a reader takes in (#57: no
// line over 300 characters outside tables), counted in characters, not UTF-8 bytes.
TEST(Analysis, EachLegendLineFitsThreeHundredCharacters) {
  for (const std::string& line : verdict_legend()) {
    size_t characters = 0;
    for (const char c : line) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    EXPECT_LE(characters + 2, 300U) << line;  // "- " before it
  }
}

TEST(Analysis, SentencesAreGeneratedFromTheData) {
  // The fixture has 3 and 1 repetitions: too few for any claim, and each sentence says why.
  EXPECT_EQ(said(recommendations(make_groups({load_result_file(kFixture)}))),
            (std::vector<std::string>{
                "native/fused vs torch/eager_host at mix:early: ? · ambiguous between native/fused (1.5 µs [1–2]) and "
                "torch/eager_host (11 µs [10–12]): 3 and 3 repetitions are too few for a 99% interval of their ratio",
                "native/fused vs torch/eager_host at mix:late: ? · ambiguous between native/fused (5 µs [5–5]) and "
                "torch/eager_host (30 µs [30–30]): 1 and 1 repetitions are too few for a 99% interval of their "
                "ratio"}));
  EXPECT_EQ(format_ratio(55.4), "55×");
  EXPECT_EQ(format_ratio(1.04), "1.0×");
  EXPECT_EQ(format_ratio(0.0213), "0.021×");
  // Lower bounds round down, never up.
  EXPECT_EQ(format_at_least(55.9), "55×");
  EXPECT_EQ(format_at_least(6.38), "6.3×");
  EXPECT_EQ(format_at_least(6.3), "6.3×");
  EXPECT_EQ(format_at_least(1.0399), "3%");
}

TEST(Analysis, ClaimsAtTheConservativeEdgeOfTheRatio) {
  // Five repetitions each, cv about 1%: intervals [min, max] at 93.75%, far apart.
  Group g = group_of({{{"native/graph_cond", "mix:late"}, {1.00, 1.01, 1.02, 0.99, 1.005}},
                      {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 9.9, 10.05, 9.95}}});
  // 9.9 / 1.02 = 9.705...: "at least 9.7×", not the 9.95 of the medians.
  EXPECT_EQ(said(recommendations({g})),
            (std::vector<std::string>{"native/graph_cond vs torch/eager_host at mix:late: FASTER ≥9.7× · "
                                      "native/graph_cond (1 µs [0.99–1.02]) is at least 9.7× faster than "
                                      "torch/eager_host (10 µs [9.9–10.1]) (ratio [9.7–10.3]×)"}));
  const std::vector<Winner> winners = best_strategies({g});
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_NEAR(winners[0].margin, 9.9 / 1.02, 1e-12);
  EXPECT_TRUE(winners[0].same.empty());
  EXPECT_FALSE(winners[0].unstable);

  // eager_host wins, named against the runner-up; a small lead is quoted in percent.
  g = group_of({{{"native/graph_cond", "mix:late"}, {10.7, 10.8, 10.75, 10.72, 10.78}},
                {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 10.05, 10.02, 10.08}}});
  EXPECT_EQ(
      said(recommendations({g})),
      (std::vector<std::string>{"torch/eager_host vs native/graph_cond at mix:late: FASTER ≥5% · torch/eager_host "
                                "(10.1 µs [10–10.1]) is at least 5% faster than native/graph_cond (10.8 µs "
                                "[10.7–10.8]) (ratio [1.05–1.08]×)"}));

  // Apart, but by less than the minimum effect (10.5 / 10.1 = 1.04), and the whole interval inside the
  // margin of sameness: the same within 1.2x, which the sentence says with the interval.
  g = group_of({{{"native/graph_cond", "mix:late"}, {10.5, 10.6, 10.55, 10.52, 10.58}},
                {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 10.05, 10.02, 10.08}}});
  EXPECT_EQ(said(recommendations({g})),
            (std::vector<std::string>{"torch/eager_host vs native/graph_cond at mix:late: SAME · torch/eager_host "
                                      "(10.1 µs [10–10.1]) and native/graph_cond (10.6 µs [10.5–10.6]) are the same "
                                      "within 1.2×: the interval of their ratio, [1.03–1.06]×, lies inside that "
                                      "margin of sameness"}));
  Judgement j = judge(*g.cell("torch/eager_host", "mix:late"), *g.cell("native/graph_cond", "mix:late"));
  EXPECT_EQ(j.standing, Standing::same);
  EXPECT_DOUBLE_EQ(j.ratio.low, 10.5 / 10.1);
  EXPECT_DOUBLE_EQ(j.ratio.high, 10.6 / 10.0);
  // 4% apart with a spread that reaches past the margin: ambiguous, with the effect this data would
  // have called (1.05 x the median ratio over L) and the largest it cannot exclude (U).
  g = group_of({{{"native/graph_cond", "mix:late"}, {10.5, 12.6, 10.55, 9.5, 10.58}},
                {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 10.05, 10.02, 10.08}}});
  j = judge(*g.cell("torch/eager_host", "mix:late"), *g.cell("native/graph_cond", "mix:late"));
  EXPECT_EQ(j.standing, Standing::ambiguous);
  EXPECT_DOUBLE_EQ(j.ratio.low, 9.5 / 10.1);
  EXPECT_DOUBLE_EQ(j.ratio.high, 12.6 / 10.0);
  EXPECT_NEAR(j.detectable, 1.05 * j.ratio.median / (9.5 / 10.1), 1e-9);
  EXPECT_DOUBLE_EQ(j.cannot_exclude, 12.6 / 10.0);
  EXPECT_EQ(said(recommendations({g})),
            (std::vector<std::string>{"torch/eager_host vs native/graph_cond at mix:late: ? · ambiguous between "
                                      "torch/eager_host (10.1 µs [10–10.1]) and native/graph_cond (10.6 µs "
                                      "[9.5–12.6]): the ratio [0.94–1.26]× holds 1 but reaches past the 1.2× margin "
                                      "of sameness (it would have called 1.17× or more, and cannot exclude up to "
                                      "1.3×)"}));
}

TEST(Analysis, OverlappingTightIntervalsAreTheSameNotAWin) {
  // Medians 10.0 and 10.2, but the intervals share [10.1, 10.3]: no winner, and the whole interval of
  // their ratio lies inside the 1.2x margin: the same.
  const Group g = group_of({{{"native/graph_cond", "mix:late"}, {9.9, 10.0, 10.3, 9.95, 10.05}},
                            {{"torch/eager_host", "mix:late"}, {10.1, 10.2, 10.25, 10.15, 10.22}}});
  EXPECT_EQ(said(recommendations({g})),
            (std::vector<std::string>{"native/graph_cond vs torch/eager_host at mix:late: SAME · native/graph_cond (10 "
                                      "µs [9.9–10.3]) and torch/eager_host (10.2 µs [10.1–10.2]) are the same within "
                                      "1.2×: the interval of their ratio, [0.98–1.04]×, lies inside that margin of "
                                      "sameness"}));
  const std::vector<Winner> winners = best_strategies({g});
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].strategy, "native/graph_cond");
  EXPECT_EQ(winners[0].same, (std::vector<std::string>{"torch/eager_host"}));
  EXPECT_DOUBLE_EQ(winners[0].margin, 0.0);
}

TEST(Analysis, UnstableIsALabelNotAVeto) {
  // eager_host's repetitions spread far (cv about 40%); the medians alone would say 10×, every
  // repetition of graph_cond is still at least 3.9× (4 / 1.02) faster than every one of eager_host.
  const Group g = group_of({{{"native/graph_cond", "mix:late"}, {1.00, 1.01, 1.02, 0.99, 1.005}},
                            {{"torch/eager_host", "mix:late"}, {10, 20, 9.5, 10.5, 4}}});
  const Cell& eager = *g.cell("torch/eager_host", "mix:late");
  EXPECT_TRUE(eager.unstable);
  EXPECT_FALSE(g.cell("native/graph_cond", "mix:late")->unstable);
  ASSERT_EQ(recommendations({g}).size(), 1u);
  EXPECT_EQ(status_text(recommendations({g})[0].judgement), "FASTER ≥3.9×");
  // The threshold is the caller's: at 60% the same data is stable.
  EXPECT_FALSE(make_cell({10, 20, 9.5, 10.5, 4}, 0.6).unstable);
}

TEST(AnswerBudget, TheAnswersComparisonsAndTheCellsEachFileRunsAgain) {
  // exit:1 only: three PyTorch options (the peer's two, aoti/cond), condbench's fused (the fastest),
  // another strategy of condbench's (not in the answer) and eager_host.
  Group g = group_of({{{"python/py_eager_if", "exit:1"}, {80, 81, 82}},  // too few repetitions
                      {{"python/py_cond", "exit:1"}, {1400, 1410, 1390, 1405, 1395, 1402, 1398, 1401, 1399, 1403}},
                      {{"aoti/cond", "exit:1"}, {4.3, 4.35, 4.25, 4.4, 4.2, 4.31, 4.29, 4.33, 4.27, 4.3}},
                      {{"native/fused", "exit:1"}, {0.37, 0.371, 0.372, 0.369, 0.37, 0.371, 0.369, 0.37, 0.37, 0.371}},
                      {{"native/layered", "exit:1"}, {0.9, 0.91, 0.92, 0.89, 0.9, 0.91, 0.89, 0.9, 0.9, 0.91}},
                      {{"torch/eager_host", "exit:1"}, {28, 28.1, 27.9, 28.05, 27.95, 28, 28.1, 27.9, 28, 28}}});
  for (auto& [key, cell] : g.cells) {
    cell.name = key.first;
    cell.looks = kAnswerLooks;  // as a run spending a budget judges: 10 against 3 has no interval then
    cell.file = is_pytorch_option(key.first) && key.first != "aoti/cond" ? 1 : 0;  // the peer's file
  }
  std::set<std::pair<std::string, std::string>> pairs;
  for (const AnswerPair& p : answer_pairs(g)) {
    EXPECT_EQ(p.scenario, "exit:1");
    EXPECT_TRUE(pairs.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second) << p.a << " " << p.b << " twice";
  }
  // each row against the fastest (fused); the fastest PyTorch option against the next; torch.cond
  // against the Python if, and deployed against eager
  EXPECT_EQ(pairs, (std::set<std::pair<std::string, std::string>>{{"aoti/cond", "native/fused"},
                                                                  {"native/fused", "python/py_cond"},
                                                                  {"native/fused", "python/py_eager_if"},
                                                                  {"native/fused", "torch/eager_host"},
                                                                  {"aoti/cond", "python/py_eager_if"},
                                                                  {"python/py_cond", "python/py_eager_if"},
                                                                  {"aoti/cond", "python/py_cond"}}));
  // py_eager_if's three comparisons are undecided: the peer runs it and py_cond again, condbench
  // fused and aoti/cond.
  size_t undecided = 0;
  EXPECT_EQ(undecided_cells({g}, 1, &undecided), (std::vector<std::string>{"python/py_cond", "python/py_eager_if"}));
  EXPECT_EQ(undecided, 3u);
  // ... and eager_host, which the answer compares with fused: it must see the rounds fused sees
  EXPECT_EQ(undecided_cells({g}, 0, &undecided),
            (std::vector<std::string>{"aoti/cond", "native/fused", "torch/eager_host"}));
  EXPECT_EQ(undecided, 2u);  // py_cond against py_eager_if is the peer's alone
  // Not batch 1: no answer, nothing to run again.
  g.batch = 64;
  EXPECT_TRUE(answer_pairs(g).empty());
  EXPECT_TRUE(undecided_cells({g}, 1).empty());
}

TEST(Answer, AFileSaysWhichFamiliesItTimesPerToken) {
  // the report names no family: a file's kPerTokenContext does; one without it timed the decoder alone
  const auto group = [](const std::optional<std::string>& per_token, const std::string& family) {
    ResultFile f;
    if (per_token) f.context[kPerTokenContext] = *per_token;
    Series s;
    s.name = "early_exit/cpu/torch/masked/exit:1/batch:2/model:" + family + "/vocab:8/blocks:1";
    s.device = "cpu", s.engine = "torch", s.strategy = "masked", s.scenario = "exit:1";
    s.batch = 2, s.blocks = 1;
    s.model = {{"model", family}, {"vocab", "8"}, {"blocks", "1"}};
    s.times_us = {1, 2, 3};
    f.series.push_back(s);
    const std::vector<Group> groups = make_groups({f});
    return groups.size() == 1 && groups[0].per_token;
  };
  EXPECT_TRUE(group(std::nullopt, "decoder"));
  EXPECT_FALSE(group(std::nullopt, "transformer"));
  EXPECT_TRUE(group("decoder,ssm", "ssm"));
  EXPECT_TRUE(group("decoder,ssm", "decoder"));
  EXPECT_FALSE(group("ssm", "decoder"));
  EXPECT_FALSE(group("decoder", "decode"));
  EXPECT_FALSE(group("", "decoder"));
  EXPECT_TRUE(group("decoder,", "decoder"));
  EXPECT_FALSE(group(",,", ""));
}

TEST(AnswerBudget, AFileSaysHowManyLooksItsVerdictsAreSplitOver) {
  const auto file_with = [](const std::string& looks) {
    ResultFile f;
    f.context["condbench_interleaving"] = "random";
    if (!looks.empty()) f.context[kAnswerLooksContext] = looks;
    Series s;
    s.name = "early_exit/cpu/native/fused/exit:1/batch:1/hidden:64/blocks:3";
    s.device = "cpu", s.engine = "native", s.strategy = "fused", s.scenario = "exit:1";
    s.batch = 1, s.blocks = 3;
    s.model = {{"hidden", "64"}, {"blocks", "3"}};
    s.times_us = {1, 2, 3};
    f.series.push_back(s);
    return f;
  };
  for (const auto& [text, looks] :
       std::vector<std::pair<std::string, size_t>>{{"", 1},
                                                   {"3", 3},
                                                   {"1", 1},
                                                   {"0", 1},
                                                   {"7", 7},
                                                   {"x", kAnswerLooks},
                                                   {"-2", kAnswerLooks},
                                                   {"99999999999999999999", kAnswerLooks}}) {
    const std::vector<Group> groups = make_groups({file_with(text)});
    ASSERT_EQ(groups.size(), 1u);
    const Cell& c = groups[0].cells.begin()->second;
    EXPECT_EQ(c.looks, looks) << "'" << text << "'";
    EXPECT_EQ(c.name, "early_exit/cpu/native/fused/exit:1/batch:1/hidden:64/blocks:3");
  }
}

TEST(Answer, WhatToWriteIsDecidedWhereverTheDataSupportsIt) {
  // exit:1 stable and apart: claims at the interval edges; exit:4: the Python if is unstable, and
  // still decided where its spread leaves the others clearly apart.
  Group g = group_of({{{"python/py_eager_if", "exit:1"}, {80, 81, 82, 79, 80.5}},
                      {{"python/py_cond", "exit:1"}, {1400, 1410, 1390, 1405, 1395}},
                      {{"python/py_cond_compile", "exit:1"}, {150, 151, 152, 149, 150.5}},
                      {{"torch/eager_host", "exit:1"}, {28, 28.1, 27.9, 28.05, 27.95}},
                      {{"native/fused", "exit:1"}, {0.37, 0.371, 0.372, 0.369, 0.3705}},
                      {{"python/py_eager_if", "exit:4"}, {200, 400, 250, 150, 300}},
                      {{"python/py_cond", "exit:4"}, {1500, 1510, 1490, 1505, 1495}},
                      {{"native/fused", "exit:4"}, {1.4, 1.41, 1.42, 1.39, 1.405}},
                      {{"native/fused", "mix:late"}, {1.4, 1.41, 1.42, 1.39, 1.405}}});
  g.device_label = "cpu · X";
  EXPECT_EQ(answer_scenarios(g), (std::vector<std::string>{"exit:1", "exit:4"}));
  EXPECT_EQ(pytorch_options(g),
            (std::vector<std::string>{"python/py_cond", "python/py_cond_compile", "python/py_eager_if"}));
  // A verdict per question and scenario; no aoti/cond here, so no row on it. exit:1: 149 / 82 = 1.817,
  // "≥1.8×"; exit:4: 1490 / 400 = 3.7 (the Python if is unstable, cv 38%, and still every repetition of
  // it beats every one of py_cond); 79 / 0.372 = 212; 150 / 1.42 = 105.
  EXPECT_EQ(verdicts(g),
            (std::vector<std::string>{
                "fastest with PyTorch · exit:1 · python/py_eager_if vs python/py_cond_compile: FASTER ≥1.8× ◊",
                "fastest with PyTorch · exit:4 · python/py_eager_if vs python/py_cond: FASTER ≥3.7×",
                "Python if vs nested torch.cond · exit:1 · python/py_eager_if vs python/py_cond: FASTER ≥16×",
                "Python if vs nested torch.cond · exit:4 · python/py_eager_if vs python/py_cond: FASTER ≥3.7×",
                "condbench's fastest vs PyTorch's · exit:1 · native/fused vs python/py_eager_if: FASTER ≥212× ◊",
                "condbench's fastest vs PyTorch's · exit:4 · native/fused vs python/py_eager_if: FASTER ≥105× ◊"}));
  // The sentence behind a cell, with the figures it rests on (no exponents).
  EXPECT_EQ(explain(g, "python/py_eager_if", "python/py_cond_compile", "exit:1"),
            "python/py_eager_if (80.5 µs [79–82]) is at least 1.8× faster than python/py_cond_compile (150 µs "
            "[149–152]) (ratio [1.81–1.93]×)");
  EXPECT_EQ(explain(g, "python/py_eager_if", "python/py_cond", "exit:4"),
            "python/py_eager_if (250 µs [150–400]) is at least 3.7× faster than python/py_cond (1500 µs [1490–1510]) "
            "(ratio [3.72–10.1]×)");

  // The peer's cells from another process than condbench's: the allowance for drift between them
  // divides the factor (0.37 µs against 80.5: 79 / 0.372 / 1.7 = 124), marked; the peer's own cells,
  // interleaved in one file, still need none.
  for (auto& [key, cell] : g.cells)
    if (is_pytorch_option(key.first)) cell.file = 1;
  const std::vector<std::string> apart = verdicts(g);
  EXPECT_EQ(apart[2], "Python if vs nested torch.cond · exit:1 · python/py_eager_if vs python/py_cond: FASTER ≥16×");
  EXPECT_EQ(apart[4],
            "condbench's fastest vs PyTorch's · exit:1 · native/fused vs python/py_eager_if: FASTER ≥124× ‡◊");
  EXPECT_NE(explain(g, "native/fused", "python/py_eager_if", "exit:1")
                .find("(ratio [212–223]×, allowing 1.7× for drift between separately timed cells)"),
            std::string::npos);

  // Not batch 1, or no Python option: nothing to answer.
  g.batch = 64;
  EXPECT_TRUE(answer_rows(g).empty());
}

// A decoder (docs/design.md §8) without the peer: its answer is every strategy the run
// wrote it with, per generated token, at every batch, with the host's if against masking and the
// fastest against the host's if decided in words.
TEST(Answer, ADecodersTableIsAtEveryBatchWithEveryStrategy) {
  Group g = group_of({{{"torch/eager_host", "exit:1"}, {1300, 1310, 1290, 1305, 1295}},
                      {{"torch/masked", "exit:1"}, {4300, 4310, 4290, 4305, 4295}},
                      {{"native/fused", "exit:1"}, {170, 171, 172, 169, 170.5}},
                      {{"torch/eager_host", "exit:4"}, {3400, 3410, 3390, 3405, 3395}},
                      {{"torch/masked", "exit:4"}, {4800, 4810, 4790, 4805, 4795}},
                      {{"native/fused", "exit:4"}, {950, 951, 952, 949, 950.5}}});
  g.device_label = "cpu · X";
  g.batch = 8;
  g.model = {{"model", "decoder"}, {"d_model", "256"}, {"blocks", "3"}};
  g.per_token = true;
  const std::optional<AnswerTable> t = answer_table(g);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->scenarios, (std::vector<std::string>{"exit:1", "exit:4"}));
  EXPECT_EQ(t->rows, (std::vector<std::string>{"native/fused", "torch/eager_host", "torch/masked"}));
  EXPECT_EQ(t->best, (std::vector<std::string>{"native/fused", "native/fused"}));
  EXPECT_EQ(verdicts(g), (std::vector<std::string>{
                             "host's if vs masking · exit:1 · torch/eager_host vs torch/masked: FASTER ≥3.2×",
                             "host's if vs masking · exit:4 · torch/eager_host vs torch/masked: FASTER ≥1.4×",
                             "fastest vs the host's if · exit:1 · native/fused vs torch/eager_host: FASTER ≥7.5× ◊",
                             "fastest vs the host's if · exit:4 · native/fused vs torch/eager_host: FASTER ≥3.5× ◊"}));
  // Not a decoder at batch 8: no answer.
  g.model = {{"hidden", "64"}, {"blocks", "3"}};
  g.per_token = false;
  EXPECT_FALSE(answer_table(g));
}

// The peer's decode loops (batch 1) add theirs: torch.cond against the host's if, and the fastest
// way to write it with PyTorch, beside the C++ strategies' questions.
TEST(Answer, ADecodersPythonLoopsAreAskedTheirOwnQuestions) {
  Group g = group_of({{{"torch/eager_host", "exit:1"}, {900, 905, 895, 902, 898}},
                      {{"python/py_eager_if", "exit:1"}, {2000, 2010, 1990, 2005, 1995}},
                      {{"python/py_cond", "exit:1"}, {9000, 9010, 8990, 9005, 8995}},
                      {{"python/py_masked_compile", "exit:1"}, {700, 701, 699, 700.5, 699.5}}});
  g.device_label = "cpu · X";
  g.batch = 1;
  g.model = {{"model", "decoder"}, {"d_model", "256"}, {"blocks", "3"}};
  g.per_token = true;
  EXPECT_EQ(verdicts(g),
            (std::vector<std::string>{
                "Python if vs nested torch.cond · exit:1 · python/py_eager_if vs python/py_cond: FASTER ≥4.4×",
                "fastest with PyTorch · exit:1 · python/py_masked_compile vs python/py_eager_if: FASTER ≥2.8× ◊",
                "fastest vs the host's if · exit:1 · python/py_masked_compile vs torch/eager_host: FASTER ≥1.2× ◊"}));
}

// torch.cond deployed to C++ (engine aoti) is one of the ways a PyTorch user writes it, set against
// torch.cond in eager mode; condbench's own strategies are measured against the best of them.
TEST(Answer, TorchCondDeployedWithAotInductorIsAPyTorchOption) {
  Group g = group_of({{{"python/py_cond", "exit:1"}, {1400, 1410, 1390, 1405, 1395}},
                      {{"aoti/cond", "exit:1"}, {4.3, 4.35, 4.25, 4.4, 4.2}},
                      {{"aoti/masked", "exit:1"}, {9, 9.1, 8.9, 9.05, 8.95}},
                      {{"native/fused", "exit:1"}, {0.37, 0.371, 0.372, 0.369, 0.3705}}});
  g.device_label = "cpu · X";
  EXPECT_EQ(pytorch_options(g), (std::vector<std::string>{"aoti/cond", "aoti/masked", "python/py_cond"}));
  // 8.9 / 4.4 = 2.02; 1390 / 4.4 = 315.9; 4.2 / 0.372 = 11.3
  EXPECT_EQ(verdicts(g), (std::vector<std::string>{
                             "fastest with PyTorch · exit:1 · aoti/cond vs aoti/masked: FASTER ≥2.0×",
                             "torch.cond: AOTInductor vs eager · exit:1 · aoti/cond vs python/py_cond: FASTER ≥315× ◊",
                             "condbench's fastest vs PyTorch's · exit:1 · native/fused vs aoti/cond: FASTER ≥11× ◊"}));
  EXPECT_EQ(explain(g, "aoti/cond", "python/py_cond", "exit:1"),
            "aoti/cond (4.3 µs [4.2–4.4]) is at least 315× faster than python/py_cond (1400 µs [1390–1410]) (ratio "
            "[315–336]×)");
}

TEST(Answer, OnAGpuEveryBatchIsAskedWhatTheConditionalGraphsDo) {
  Group cpu = group_of({{{"torch/eager_host", "mix:uniform"}, {10, 10.1, 9.9, 10.05, 9.95}},
                        {{"torch/graph_cond", "mix:uniform"}, {12, 12.1, 11.9, 12.05, 11.95}}});
  cpu.device_label = "cpu · X";
  EXPECT_TRUE(answer_rows(cpu).empty());  // no GPU, no question of graphs
  EXPECT_NE(round_trip_sentence({}).find("unmeasured here"), std::string::npos);

  Group gpu = group_of({{{"torch/eager_host", "mix:uniform"}, {50, 50.5, 49.5, 50.2, 49.8}},
                        {{"torch/graph_cond", "mix:uniform"}, {12, 12.1, 11.9, 12.05, 11.95}},
                        {{"torch/masked_graph", "mix:uniform"}, {11, 11.1, 10.9, 11.05, 10.95}},
                        {{"native/graph_cond", "mix:uniform"}, {7, 7.05, 6.95, 7.02, 6.98}},
                        {{"native/device_flag_graph", "mix:uniform"}, {5, 5.05, 4.95, 5.02, 4.98}}});
  gpu.device_label = "cuda · H200";
  gpu.batch = 64;
  // 11.9 / 11.1 = 1.07: IF nodes lose to masking by at least 7%; 49.5 / 12.1 = 4.09; 6.95 / 5.05 = 1.376
  EXPECT_EQ(verdicts(gpu),
            (std::vector<std::string>{
                "IF nodes vs masking · mix:uniform · torch/graph_cond vs torch/masked_graph: SLOWER ≥7%",
                "device decides vs host decides · mix:uniform · torch/graph_cond vs torch/eager_host: FASTER "
                "≥4.0×",
                "IF nodes vs flag tests · mix:uniform · native/graph_cond vs native/device_flag_graph: "
                "SLOWER ≥1.3×"}));
  EXPECT_EQ(round_trip_sentence({{"cuda · H200", {{"read4_pinned_sync", 8.25}, {"launch_sync", 5.5}}}}),
            "The host round trip each exit test pays when decided on the host: on cuda · H200, reading one exit test "
            "back to the host costs 8.25 µs (read4_pinned_sync), against 5.5 µs for a launch and its synchronisation "
            "(launch_sync) (medians of this run's primitives).");
}

}  // namespace
}  // namespace condbench::report
