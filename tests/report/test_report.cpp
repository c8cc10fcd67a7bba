// condbench-report's arithmetic: statistics with hand-checked values, tables, winners and the
// generated sentences from a small fixture (tests/report/fixtures/small.json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "analysis.h"
#include "comparison.h"
#include "condbench/error.h"
#include "document.h"
#include "render.h"
#include "result_file.h"
#include "stability.h"
#include "statistics.h"

namespace condbench::report {
namespace {

const std::string kFixture = std::string(CONDBENCH_REPORT_FIXTURES) + "/small.json";

TEST(Statistics, MedianQuantileAndSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.25), 1.75);
  // mean 2, sample sd 1: cv 0.5
  EXPECT_DOUBLE_EQ(coefficient_of_variation({1, 2, 3}), 0.5);
}

TEST(ResultFileTest, ReadsRepetitionsCountersAndErrors) {
  const ResultFile f = load_result_file(kFixture);
  EXPECT_EQ(f.context.at("cpu_model"), "Test CPU");
  EXPECT_EQ(f.device_label("cpu"), "cpu · Test CPU");
  ASSERT_EQ(f.series.size(), 7u);  // six early_exit series and one skipped; the foreign one ignored
  const Series& eager = f.series[0];
  EXPECT_EQ(eager.strategy_key(), "torch/eager_host");
  EXPECT_EQ(eager.scenario, "mix:early");
  EXPECT_EQ(eager.batch, 1);
  EXPECT_EQ(eager.blocks, 3);
  EXPECT_EQ(model_text(eager.model), "hidden 64, 3 blocks");
  EXPECT_EQ(eager.times_us, (std::vector<double>{10.0, 12.0, 11.0}));  // 12000 ns read as 12 us
  EXPECT_DOUBLE_EQ(eager.counters.at("host_syncs"), 1.4);
  EXPECT_EQ(f.series.back().error, "skipped: no CUDA device on this machine");
}

// The fixture, with every early_exit benchmark also under the name `rename` makes of its own.
nlohmann::json fixture_with_copies(const std::function<std::string(std::string)>& rename) {
  std::ifstream in(kFixture);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t at; (at = text.find("NaN")) != std::string::npos;) text.replace(at, 3, "null");  // as Python writes it
  nlohmann::json data = nlohmann::json::parse(text);
  nlohmann::json more = nlohmann::json::array();
  for (nlohmann::json b : data["benchmarks"]) {
    for (const char* key : {"name", "run_name"}) {
      const std::string name = b.value(key, "");
      if (name.rfind("early_exit/", 0) == 0) b[key] = rename(name);
    }
    more.push_back(b);
  }
  for (const nlohmann::json& b : more) data["benchmarks"].push_back(b);
  return data;
}

TEST(ResultFileTest, ANameWithAnUnknownAxisIsReadGroupedAndShown) {
  // The fixture again, every early_exit benchmark also under a name with one more axis (seq:128):
  // a second model, read beside the first, never merged with it and never dropped.
  const nlohmann::json data =
      fixture_with_copies([](std::string name) { return name.insert(name.find("/hidden:"), "/seq:128"); });
  const ResultFile f = parse_result_file("extra-axis.json", data.dump());
  ASSERT_EQ(f.series.size(), 14u);
  EXPECT_EQ(model_text(f.series[0].model), "hidden 64, 3 blocks");
  EXPECT_EQ(model_text(f.series[7].model), "seq 128, hidden 64, 3 blocks");
  EXPECT_EQ(f.series[7].name, "early_exit/cpu/torch/eager_host/mix:early/batch:1/seq:128/hidden:64/blocks:3");
  EXPECT_EQ(f.series[7].times_us, f.series[0].times_us);
  const std::vector<Group> groups = make_groups({f});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].model_text(), "hidden 64, 3 blocks");
  EXPECT_EQ(groups[1].model_text(), "seq 128, hidden 64, 3 blocks");
  EXPECT_EQ(groups[1].strategies, groups[0].strategies);
  const std::vector<Winner> winners = best_strategies(groups);
  ASSERT_EQ(winners.size(), 4u);
  EXPECT_EQ(model_text(winners[2].model), "seq 128, hidden 64, 3 blocks");
}

TEST(ResultFileTest, TransformerNamesAreTheirOwnGroupWithTheirSizes) {
  // The fixture's benchmarks again under transformer names (condbench's BenchmarkCase::name): a
  // group of their own beside the mlp's, titled with the transformer's sizes.
  const nlohmann::json data = fixture_with_copies([](std::string name) {
    return name.replace(name.find("/hidden:64/blocks:3"), 19,
                        "/model:transformer/d_model:256/heads:4/ffn:1024/seq:32/blocks:3");
  });
  const ResultFile f = parse_result_file("transformer.json", data.dump());
  ASSERT_EQ(f.series.size(), 14u);
  EXPECT_EQ(model_text(f.series[7].model), "transformer: d_model 256, heads 4, ffn 1024, seq 32, 3 blocks");
  const std::vector<Group> groups = make_groups({f});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].model_text(), "hidden 64, 3 blocks");
  EXPECT_EQ(groups[1].model_text(), "transformer: d_model 256, heads 4, ffn 1024, seq 32, 3 blocks");
  // a name without its depth is refused, naming the axis
  nlohmann::json broken = nlohmann::json::parse(data.dump());
  for (nlohmann::json& b : broken["benchmarks"])
    for (const char* key : {"name", "run_name"}) {
      std::string name = b.value(key, "");
      const size_t at = name.find("/blocks:3");
      if (at != std::string::npos) b[key] = name.erase(at, 9);
    }
  try {
    parse_result_file("broken.json", broken.dump());
    FAIL() << "a name without blocks was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no blocks:N"), std::string::npos) << e.what();
  }
}

TEST(ResultFileTest, AFamilyNoReaderKnowsIsGroupedSortedAndPrintedByItsAxes) {
  // A model family condbench-report was never told about, with axes it has never seen: its own
  // group, after the mlp's, described and titled from its axes in the report and in --table.
  const nlohmann::json data = fixture_with_copies([](std::string name) {
    return name.replace(name.find("/hidden:64/blocks:3"), 19, "/model:rnn/units:128/cell:gru/blocks:2");
  });
  const ResultFile f = parse_result_file("rnn.json", data.dump());
  const std::vector<Group> groups = make_groups({f});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].model_text(), "rnn: units 128, cell gru, 2 blocks");
  EXPECT_EQ(groups[1].blocks, 2);
  EXPECT_EQ(groups[1].strategies, groups[0].strategies);
  EXPECT_EQ(groups[1].cells.size(), groups[0].cells.size());
  const std::string table = latency_table_markdown({f});
  EXPECT_NE(table.find("| cpu · Test CPU | rnn: units 128, cell gru, 2 blocks | 1 | mix:early |"), std::string::npos)
      << table;
  EXPECT_LT(table.find("hidden 64, 3 blocks"), table.find("rnn: units 128"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("report-rnn-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  write_report({f}, dir.string(), "");
  const std::string md = read_text(dir / "report.md");
  std::filesystem::remove_all(dir);
  EXPECT_NE(md.find("### cpu · Test CPU · batch 1 · rnn: units 128, cell gru, 2 blocks"), std::string::npos) << md;
  EXPECT_NE(md.find("| cpu · Test CPU | 1 | rnn: units 128, cell gru, 2 blocks | mix:early |"), std::string::npos);
}

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

TEST(Analysis, SentencesAreGeneratedFromTheData) {
  // The fixture has 3 and 1 repetitions: too few for any claim, and each sentence says why.
  const std::vector<std::string> sentences = recommendations(make_groups({load_result_file(kFixture)}));
  EXPECT_EQ(sentences,
            (std::vector<std::string>{
                "At batch 1 (hidden 64, 3 blocks) on cpu · Test CPU, no recommendation when most rows exit early: "
                "ambiguous between native/fused and torch/eager_host: 3 and 3 repetitions are too few for a 99% "
                "interval of their ratio.",
                "At batch 1 (hidden 64, 3 blocks) on cpu · Test CPU, no recommendation when most rows exit late: "
                "ambiguous between native/fused and torch/eager_host: 1 and 1 repetitions are too few for a 99% "
                "interval of their ratio."}));
  EXPECT_EQ(format_ratio(55.4), "55×");
  EXPECT_EQ(format_ratio(1.04), "1.0×");
  EXPECT_EQ(format_ratio(0.0213), "0.021×");
  // Lower bounds round down, never up.
  EXPECT_EQ(format_at_least(55.9), "55×");
  EXPECT_EQ(format_at_least(6.38), "6.3×");
  EXPECT_EQ(format_at_least(6.3), "6.3×");
  EXPECT_EQ(format_at_least(1.0399), "3%");
}

// A group of one model and batch from samples per (strategy, scenario).
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

const std::string kWhere = "At batch 1 (hidden 64, 3 blocks) on cuda · X, ";

TEST(Analysis, ClaimsAtTheConservativeEdgeOfTheRatio) {
  // Five repetitions each, cv about 1%: intervals [min, max] at 93.75%, far apart.
  Group g = group_of({{{"native/graph_cond", "mix:late"}, {1.00, 1.01, 1.02, 0.99, 1.005}},
                      {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 9.9, 10.05, 9.95}}});
  // 9.9 / 1.02 = 9.705...: "at least 9.7×", not the 9.95 of the medians.
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "native/graph_cond is at least 9.7× faster than "
                                                                     "torch/eager_host when most rows exit late."}));
  const std::vector<Winner> winners = best_strategies({g});
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_NEAR(winners[0].margin, 9.9 / 1.02, 1e-12);
  EXPECT_TRUE(winners[0].same.empty());
  EXPECT_FALSE(winners[0].unstable);

  // eager_host wins, named against the runner-up; a small lead is quoted in percent.
  g = group_of({{{"native/graph_cond", "mix:late"}, {10.7, 10.8, 10.75, 10.72, 10.78}},
                {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 10.05, 10.02, 10.08}}});
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "torch/eager_host is the fastest when most rows "
                                                                     "exit late, at least 5% ahead of "
                                                                     "native/graph_cond."}));

  // Apart, but by less than the minimum effect (10.5 / 10.1 = 1.04), and the whole interval inside the
  // margin of sameness: the same within 1.2x, which the sentence says with the interval.
  g = group_of({{{"native/graph_cond", "mix:late"}, {10.5, 10.6, 10.55, 10.52, 10.58}},
                {{"torch/eager_host", "mix:late"}, {10.0, 10.1, 10.05, 10.02, 10.08}}});
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "no recommendation when most rows exit late: "
                                                                     "torch/eager_host and native/graph_cond are the "
                                                                     "same within 1.2×: the interval of their ratio, "
                                                                     "[1.03–1.06]×, lies inside that margin of "
                                                                     "sameness."}));
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
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "no recommendation when most rows exit late: "
                                                                     "ambiguous between torch/eager_host and "
                                                                     "native/graph_cond: the ratio [0.94–1.26]× holds "
                                                                     "1 but reaches past the 1.2× margin of sameness "
                                                                     "(it would have called 1.17× or more, and cannot "
                                                                     "exclude up to 1.3×)."}));
}

TEST(Analysis, OverlappingTightIntervalsAreTheSameNotAWin) {
  // Medians 10.0 and 10.2, but the intervals share [10.1, 10.3]: no winner, and the whole interval of
  // their ratio lies inside the 1.2x margin: the same.
  const Group g = group_of({{{"native/graph_cond", "mix:late"}, {9.9, 10.0, 10.3, 9.95, 10.05}},
                            {{"torch/eager_host", "mix:late"}, {10.1, 10.2, 10.25, 10.15, 10.22}}});
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "no recommendation when most rows exit late: "
                                                                     "native/graph_cond and torch/eager_host are "
                                                                     "the same within 1.2×: the interval of their "
                                                                     "ratio, [0.98–1.04]×, lies inside that margin "
                                                                     "of sameness."}));
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
  EXPECT_EQ(recommendations({g}), (std::vector<std::string>{kWhere + "native/graph_cond is at least 3.9× faster than "
                                                                     "torch/eager_host when most rows exit late."}));
  // The threshold is the caller's: at 60% the same data is stable.
  EXPECT_FALSE(make_cell({10, 20, 9.5, 10.5, 4}, 0.6).unstable);
}

TEST(RatioInterval, OrderStatisticsOfThePairwiseRatios) {
  // 5 and 5 at 99%: P(U = 0) = 1/252 <= 0.005 < P(U <= 1) = 2/252, so k = 1: [min/max, max/min].
  EXPECT_EQ(rank_sum_order(5, 5, 0.005), 1u);
  EXPECT_EQ(rank_sum_order(4, 4, 0.005), 0u);  // 1/70
  EXPECT_EQ(rank_sum_order(3, 3, 0.005), 0u);  // 1/20
  // Exact counts, checked against an independent enumeration of the rank-sum null distribution.
  EXPECT_EQ(rank_sum_order(10, 10, 0.005), 17u);
  EXPECT_EQ(rank_sum_order(12, 12, 0.005), 28u);
  EXPECT_EQ(rank_sum_order(5, 10, 0.005), 5u);
  EXPECT_EQ(rank_sum_order(20, 20, 0.005), 106u);
  EXPECT_EQ(rank_sum_order(25, 25, 0.005), 181u);
  EXPECT_EQ(rank_sum_order(50, 50, 0.005), 878u);
  // Unbalanced samples are counted exactly too: P(U <= k - 1) = k / 402 with one value against 401.
  EXPECT_EQ(rank_sum_order(2, 201, 0.005), 19u);
  EXPECT_EQ(rank_sum_order(1, 401, 0.005), 2u);
  // 60 and 60 (3600 pairs) take the normal approximation: the exact order is 1311; the approximation
  // must not exceed it (a narrower interval than the exact one), and stays close.
  EXPECT_LE(rank_sum_order(60, 60, 0.005), 1311u);
  EXPECT_GE(rank_sum_order(60, 60, 0.005), 1305u);

  const RatioInterval r = ratio_interval({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_EQ(r.k, 1u);
  EXPECT_DOUBLE_EQ(r.low, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(r.high, 10.0 / 1.0);
  EXPECT_FALSE(ratio_interval({1, 2, 3}, {6, 7, 8}).bounded());
  EXPECT_TRUE(ratio_interval({1, 2, 3}, {6, 7, 8}).valid);  // too few, not invalid
  for (const double bad : {0.0, -1.0, double(NAN), double(INFINITY)}) {
    const RatioInterval r = ratio_interval({1, 2, 3, 4, bad}, {6, 7, 8, 9, 10});
    EXPECT_FALSE(r.bounded());
    EXPECT_FALSE(r.valid);
  }
  // and the verdict says why, not "too few"
  Cell zero = make_cell({1, 2, 3, 4, 0}), fine = make_cell({6, 7, 8, 9, 10});
  zero.interleaved = fine.interleaved = true;
  EXPECT_EQ(verdict_text(judge(zero, fine), "a", "b", zero, fine),
            "ambiguous between a and b: a repetition's time is zero, negative or not a number");
  // A crafted file's huge repetition counts are thinned, not multiplied out: 10^5 x 10^5 samples.
  std::vector<double> many(100000), more(100000);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i] = 1.0 + static_cast<double>(i % 997) / 1e4;
    more[i] = 3.0 + static_cast<double>(i % 991) / 1e4;
  }
  const RatioInterval big = ratio_interval(many, more);
  EXPECT_TRUE(big.bounded());
  EXPECT_GT(big.low, 2.7);
  EXPECT_LT(big.high, 3.2);
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
  // One sentence per question, a clause per scenario; no aoti/cond here, so no sentence on it.
  const std::vector<std::string> s = answer_sentences(g);
  ASSERT_EQ(s.size(), 3u);
  // exit:1: 149 / 82 = 1.817, "at least 1.8×"; exit:4: 1490 / 400 = 3.7 (the Python if is unstable,
  // cv 38%, and still every repetition of it beats every one of py_cond); figures without exponents
  EXPECT_EQ(s[0],
            "On cpu · X at batch 1 (hidden 64, 3 blocks), the fastest way to write it with PyTorch: when every row "
            "leaves at exit 1, python/py_eager_if (80.5 µs [79–82]) is at least 1.8× faster than "
            "python/py_cond_compile (150 µs [149–152]) (ratio [1.81–1.93]×); when every row leaves at exit 4, "
            "python/py_eager_if (250 µs [150–400]) is at least 3.7× faster than python/py_cond (1500 µs "
            "[1490–1510]) (ratio [3.72–10.1]×).");
  EXPECT_EQ(s[1],
            "Nested torch.cond in eager mode against a plain Python if: when every row leaves at exit 1, "
            "python/py_eager_if (80.5 µs [79–82]) is at least 16× faster than python/py_cond (1400 µs "
            "[1390–1410]) (ratio [16.9–17.9]×); when every row leaves at exit 4, python/py_eager_if (250 µs "
            "[150–400]) is at least 3.7× faster than python/py_cond (1500 µs [1490–1510]) (ratio [3.72–10.1]×).");
  // 150 / 1.42 = 105
  EXPECT_EQ(s[2],
            "condbench's fastest strategy against the best PyTorch option: when every row leaves at exit 1, "
            "native/fused (0.37 µs [0.369–0.372]) is at least 212× faster than python/py_eager_if (80.5 µs "
            "[79–82]) (ratio [212–223]×); when every row leaves at exit 4, native/fused (1.41 µs [1.39–1.42]) is "
            "at least 105× faster than python/py_eager_if (250 µs [150–400]) (ratio [105–288]×).");

  // The peer's cells from another process than condbench's: the allowance for drift between them
  // divides the factor (0.37 µs against 80.5: 79 / 0.372 / 1.7 = 124); the peer's own cells,
  // interleaved in one file, still need none.
  for (auto& [key, cell] : g.cells)
    if (is_pytorch_option(key.first)) cell.file = 1;
  const std::vector<std::string> apart = answer_sentences(g);
  EXPECT_EQ(apart[1], s[1]);
  EXPECT_NE(apart[2].find("native/fused (0.37 µs [0.369–0.372]) is at least 124× faster than python/py_eager_if "
                          "(80.5 µs [79–82]) (ratio [212–223]×, allowing 1.7× for drift between separately timed "
                          "cells)"),
            std::string::npos)
      << apart[2];

  // Not batch 1, or no Python option: nothing to answer.
  g.batch = 64;
  EXPECT_TRUE(answer_sentences(g).empty());
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
  ASSERT_TRUE(decodes(g));
  const std::optional<AnswerTable> t = answer_table(g);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->scenarios, (std::vector<std::string>{"exit:1", "exit:4"}));
  EXPECT_EQ(t->rows, (std::vector<std::string>{"native/fused", "torch/eager_host", "torch/masked"}));
  EXPECT_EQ(t->best, (std::vector<std::string>{"native/fused", "native/fused"}));
  const std::vector<std::string> s = answer_sentences(g);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].rfind("On cpu · X at batch 8 (decoder: d_model 256, 3 blocks), per generated token, the host's if "
                       "(eager_host) against masking every row (masked): when every row leaves at exit 1, "
                       "torch/eager_host (1300 µs [1290–1310]) is at least 3.2× faster than torch/masked",
                       0),
            0u)
      << s[0];
  EXPECT_NE(s[1].find("the fastest way written against the host's if: when every row leaves at exit 1, native/fused"),
            std::string::npos)
      << s[1];
  // Not a decoder at batch 8: no answer.
  g.model = {{"hidden", "64"}, {"blocks", "3"}};
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
  const std::vector<std::string> s = answer_sentences(g);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NE(s[0].find("in Python, nested torch.cond (py_cond) against the host's if (py_eager_if): when every row "
                      "leaves at exit 1, python/py_eager_if (2000 µs [1990–2010]) is at least 4."),
            std::string::npos)
      << s[0];
  EXPECT_NE(s[1].find("the fastest way to write it with PyTorch: when every row leaves at exit 1, "
                      "python/py_masked_compile (700 µs [699–701]) is at least 2."),
            std::string::npos)
      << s[1];
  EXPECT_NE(s[2].find("the fastest way written against the host's if: when every row leaves at exit 1, "
                      "python/py_masked_compile"),
            std::string::npos)
      << s[2];
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
  const std::vector<std::string> s = answer_sentences(g);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NE(s[0].find("the fastest way to write it with PyTorch: when every row leaves at exit 1, aoti/cond (4.3 µs "
                      "[4.2–4.4]) is at least"),
            std::string::npos)
      << s[0];
  // 1390 / 4.4 = 315.9
  EXPECT_EQ(s[1],
            "Nested torch.cond exported with AOTInductor and run from C++ (which still decides each level on the host) "
            "against torch.cond in eager mode: when "
            "every row leaves at exit 1, aoti/cond (4.3 µs [4.2–4.4]) is at least 315× faster than python/py_cond "
            "(1400 µs [1390–1410]) (ratio [315–336]×).");
  EXPECT_NE(s[2].find("native/fused (0.37 µs [0.369–0.372]) is at least 11× faster than aoti/cond"), std::string::npos)
      << s[2];
}

TEST(Answer, GraphsAndTheRoundTripAreUnmeasuredWithoutAGpu) {
  const Group cpu = group_of({{{"torch/eager_host", "mix:uniform"}, {10, 10.1, 9.9, 10.05, 9.95}}});
  EXPECT_NE(conditional_graphs_sentence({cpu}).find("unmeasured here"), std::string::npos);
  EXPECT_NE(round_trip_sentence({}).find("unmeasured here"), std::string::npos);

  Group gpu = group_of({{{"torch/eager_host", "mix:uniform"}, {50, 50.5, 49.5, 50.2, 49.8}},
                        {{"torch/graph_cond", "mix:uniform"}, {12, 12.1, 11.9, 12.05, 11.95}}});
  gpu.device_label = "cuda · H200";
  const std::string graphs = conditional_graphs_sentence({gpu});
  EXPECT_NE(graphs.find("torch/graph_cond (12 µs [11.9–12.1]) is at least 4.0× faster than torch/eager_host"),
            std::string::npos)
      << graphs;
  EXPECT_EQ(round_trip_sentence({{"cuda · H200", {{"read4_pinned_sync", 8.25}, {"launch_sync", 5.5}}}}),
            "The host round trip each exit test pays when decided on the host: on cuda · H200, reading one exit test "
            "back to the host costs 8.25 µs (read4_pinned_sync), against 5.5 µs for a launch and its synchronisation "
            "(launch_sync) (medians of this run's primitives).");
}

TEST(Analysis, CompareGivesChangeRatioAndVerdict) {
  ResultFile a, b;
  Series fast, slow, few;
  fast.name = "early_exit/x";
  fast.times_us = {10, 11, 12, 10.5, 11.5};
  slow = fast;
  slow.times_us = {30, 31, 32, 30.5, 31.5};
  few.name = "early_exit/y";
  few.times_us = {5};
  a.series = {fast, few};
  b.series = {slow, few};
  const std::vector<Comparison> rows = compare(a, b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].change, 20.0 / 11.0);
  // B / A in [30 / 12, 32 / 10]: 2.5 over the allowance between runs, 1.7, is 1.47 >= 1.05
  EXPECT_DOUBLE_EQ(rows[0].ratio.low, 30.0 / 12.0);
  EXPECT_DOUBLE_EQ(rows[0].ratio.high, 32.0 / 10.0);
  EXPECT_EQ(rows[0].verdict, Verdict::slower);
  EXPECT_EQ(rows[1].verdict, Verdict::too_few_repetitions);
  EXPECT_EQ(compare(b, a)[0].verdict, Verdict::faster);
  // The same file twice: no difference, but one benchmark between two runs is never SAME (the drift
  // allowance alone is wider than the margin of sameness).
  EXPECT_EQ(compare(a, a)[0].verdict, Verdict::ambiguous);
}

// Rows of a --compare as compare() makes them: `count` benchmarks of `strategy`, medians changed
// by `shift` plus a per-benchmark drift uniform in +-`drift`.
std::vector<Comparison> changed_rows(std::mt19937_64& rng, const std::string& strategy, int count, double shift,
                                     double drift) {
  std::uniform_real_distribution<double> noise(-drift, drift);
  std::vector<Comparison> rows;
  for (int i = 0; i < count; ++i) {
    Comparison c;
    c.name = strategy + "/exit:" + std::to_string(i + 1) + "/batch:1/hidden:64/blocks:3";
    c.strategy = strategy;
    c.change = shift + noise(rng);
    rows.push_back(c);
  }
  return rows;
}

TEST(CompareStrategies, AllBenchmarksOfAStrategyTogether) {
  std::mt19937_64 rng(3);
  // What a shared machine gives: single benchmarks drift by up to 15% between runs, so few of
  // them alone show a 20% slowdown; together they do.
  std::vector<Comparison> rows = changed_rows(rng, "early_exit/cpu/native/fused", 28, 0.20, 0.15);
  const StrategyComparisons alone = compare_strategies(rows);
  ASSERT_EQ(alone.strategies.size(), 1u);
  EXPECT_FALSE(alone.strategies[0].against_run);  // nothing to compare with
  EXPECT_EQ(alone.strategies[0].decisive().verdict, Verdict::slower);

  for (const Comparison& c : changed_rows(rng, "early_exit/cpu/torch/masked", 28, 0.0, 0.15)) rows.push_back(c);
  for (const Comparison& c : changed_rows(rng, "early_exit/cpu/torch/eager_host", 28, -0.03, 0.01)) rows.push_back(c);
  for (const Comparison& c : changed_rows(rng, "early_exit/cpu/torch/few", 5, 0.0, 0.01)) rows.push_back(c);
  const StrategyComparisons out = compare_strategies(rows);
  EXPECT_EQ(out.whole_run.benchmarks, 89u);
  // The median of the 4 strategies' medians: between the unchanged ones', each within its own
  // benchmarks' spread of 0 (masked's is +-15%, so its median a few percent).
  ASSERT_TRUE(out.drift);
  EXPECT_NEAR(*out.drift, 0.0, 0.04);
  ASSERT_EQ(out.strategies.size(), 4u);  // by name
  const StrategyComparison& fused = out.strategies[0];
  EXPECT_EQ(fused.strategy, "early_exit/cpu/native/fused");
  EXPECT_EQ(fused.change.benchmarks, 28u);
  EXPECT_EQ(fused.change.slower + fused.change.faster, 28u);
  EXPECT_EQ(fused.change.verdict, Verdict::slower);
  EXPECT_GE(fused.change.interval.low, kDefaultMinEffect);
  EXPECT_LE(fused.change.interval.low, fused.change.median_change);
  EXPECT_GE(fused.change.interval.confidence, kIntervalConfidence);
  ASSERT_TRUE(fused.against_run);
  EXPECT_EQ(fused.decisive().verdict, Verdict::slower);
  // 3% faster everywhere: every sign agrees, but the change is under the 5% floor.
  EXPECT_EQ(out.strategies[1].strategy, "early_exit/cpu/torch/eager_host");
  EXPECT_EQ(out.strategies[1].change.faster, 28u);
  EXPECT_EQ(out.strategies[1].change.verdict, Verdict::same);
  EXPECT_EQ(compare_strategies(rows, 0.02).strategies[1].change.verdict, Verdict::faster);
  EXPECT_EQ(out.strategies[2].decisive().verdict, Verdict::too_few_benchmarks);
  EXPECT_EQ(out.strategies[3].strategy, "early_exit/cpu/torch/masked");
  EXPECT_EQ(out.strategies[3].decisive().verdict, Verdict::same);
}

TEST(CompareStrategies, DriftOfTheWholeRunIsNotAChangeOfOneStrategy) {
  // Run B 10% faster throughout (the machine), and one strategy 30% slower on top of that.
  std::mt19937_64 rng(5);
  std::vector<Comparison> rows;
  for (const char* s : {"early_exit/cpu/torch/a", "early_exit/cpu/torch/b", "early_exit/cpu/torch/c"})
    for (const Comparison& c : changed_rows(rng, s, 28, -0.10, 0.05)) rows.push_back(c);
  for (const Comparison& c : changed_rows(rng, "early_exit/cpu/native/slowed", 28, 0.9 * 1.3 - 1, 0.05))
    rows.push_back(c);
  const StrategyComparisons out = compare_strategies(rows);
  EXPECT_EQ(out.whole_run.verdict, Verdict::faster);  // said once, for the whole run
  EXPECT_NEAR(out.whole_run.median_change, -0.10, 0.03);
  ASSERT_TRUE(out.drift);
  EXPECT_NEAR(*out.drift, -0.10, 0.02);
  for (const StrategyComparison& s : out.strategies) {
    EXPECT_EQ(s.change.verdict, s.strategy == "early_exit/cpu/native/slowed" ? Verdict::slower : Verdict::faster);
    EXPECT_EQ(s.decisive().verdict, s.strategy == "early_exit/cpu/native/slowed" ? Verdict::slower : Verdict::same)
        << s.strategy;
  }
}

TEST(CompareStrategies, AStrategyWithAThirdOfTheBenchmarksDoesNotMoveTheDrift) {
  // What scripts/aa-check met: the slowed strategy is a third of the run, so the median over all
  // benchmarks moved with it (+8%) and hid half its change. The strategies' medians do not.
  std::mt19937_64 rng(9);
  std::vector<Comparison> rows = changed_rows(rng, "early_exit/cpu/native/fused", 28, 0.21, 0.1);
  for (const char* s : {"early_exit/cpu/torch/eager_host", "early_exit/cpu/torch/masked"})
    for (const Comparison& c : changed_rows(rng, s, 28, 0.04, 0.1)) rows.push_back(c);
  const StrategyComparisons out = compare_strategies(rows);
  ASSERT_TRUE(out.drift);
  EXPECT_NEAR(*out.drift, 0.04, 0.03);
  EXPECT_EQ(out.strategies[0].decisive().verdict, Verdict::slower);
  EXPECT_EQ(out.strategies[1].decisive().verdict, Verdict::same);
  EXPECT_EQ(out.strategies[2].decisive().verdict, Verdict::same);
  // Two strategies: no drift estimate one of them could not move; each is judged as it is.
  rows.resize(56);
  EXPECT_FALSE(compare_strategies(rows).drift);
}

TEST(CompareStrategies, SameDistributionIsSameOrAmbiguousAndTwentyPercentIsSlowerAtTheExpectedRates) {
  // 28 benchmarks of a strategy, unchanged: never a claim; SAME (the median change's whole interval
  // inside the margin) where the benchmarks drift by up to 5% between the runs, and by up to 20%
  // (measured: all 2,000 trials with this seed). 20% slower: SLOWER.
  std::mt19937_64 rng(17);
  constexpr int kTrials = 2000;
  int same_steady = 0, same_noisy = 0, claims = 0, slower = 0;
  for (int t = 0; t < kTrials; ++t) {
    same_steady +=
        compare_strategies(changed_rows(rng, "s", 28, 0.0, 0.05)).strategies[0].decisive().verdict == Verdict::same;
    const Verdict noisy = compare_strategies(changed_rows(rng, "s", 28, 0.0, 0.2)).strategies[0].decisive().verdict;
    same_noisy += noisy == Verdict::same;
    claims += noisy == Verdict::faster || noisy == Verdict::slower;
    slower +=
        compare_strategies(changed_rows(rng, "s", 28, 0.2, 0.2)).strategies[0].decisive().verdict == Verdict::slower;
  }
  EXPECT_GE(same_steady, kTrials * 0.99);
  EXPECT_GE(same_noisy, kTrials * 0.95) << same_noisy;
  EXPECT_LE(claims, kTrials / 100);
  EXPECT_GE(slower, kTrials * 0.95);
}

TEST(MedianIntervalTest, OrderStatisticsAndTheConfidenceTheyReach) {
  // 5 samples: even [min, max] reaches only 1 - 2/32 = 93.75%; the interval says so.
  MedianInterval i = median_interval({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(i.low, 1.0);
  EXPECT_DOUBLE_EQ(i.high, 5.0);
  EXPECT_DOUBLE_EQ(i.confidence, 1.0 - 2.0 / 32.0);
  // 6 samples: [min, max] at 1 - 2/64.
  i = median_interval({1, 2, 3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(i.low, 1.0);
  EXPECT_DOUBLE_EQ(i.high, 6.0);
  EXPECT_DOUBLE_EQ(i.confidence, 1.0 - 2.0 / 64.0);
  // 9 samples: x(2)..x(8) covers with 1 - 2 (1 + 9) / 512 = 96.1%; x(3)..x(7) would be 82%.
  i = median_interval({9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(i.low, 2.0);
  EXPECT_DOUBLE_EQ(i.high, 8.0);
  EXPECT_NEAR(i.confidence, 1.0 - 2.0 * 10.0 / 512.0, 1e-12);
  // 20 samples: P(Bin(20, 1/2) <= 5) = 21700 / 2^20, so x(6)..x(15).
  std::vector<double> twenty;
  for (int v = 1; v <= 20; ++v) twenty.push_back(v);
  i = median_interval(twenty);
  EXPECT_DOUBLE_EQ(i.low, 6.0);
  EXPECT_DOUBLE_EQ(i.high, 15.0);
  EXPECT_NEAR(i.confidence, 1.0 - 2.0 * 21700.0 / 1048576.0, 1e-12);
  // One sample says nothing about its median's spread.
  i = median_interval({3});
  EXPECT_DOUBLE_EQ(i.low, 3.0);
  EXPECT_DOUBLE_EQ(i.confidence, 0.0);
  EXPECT_TRUE(std::isnan(median_interval({}).low));
  EXPECT_NEAR(binomial_half_cdf(20, 5), 21700.0 / 1048576.0, 1e-15);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(4, 4), 1.0);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(4, -1), 0.0);
}

TEST(MedianIntervalTest, TheNarrowestOrderStatisticsAtTheConfidenceForEverySize) {
  // The linear walk against the definition: x(k)..x(n+1-k) for the largest k whose coverage
  // 1 - 2 P(B <= k-1) is still at the confidence.
  for (int n = 1; n <= 300; ++n) {
    std::vector<double> samples;
    for (int v = n; v >= 1; --v) samples.push_back(v);
    const MedianInterval got = median_interval(samples, 0.99);
    int k = 1;
    while (k + 1 <= (n + 1) / 2 && 1.0 - 2.0 * binomial_half_cdf(n, k) >= 0.99) ++k;
    ASSERT_DOUBLE_EQ(got.low, k) << "n=" << n;
    ASSERT_DOUBLE_EQ(got.high, n + 1 - k) << "n=" << n;
    ASSERT_NEAR(got.confidence, std::max(0.0, 1.0 - 2.0 * binomial_half_cdf(n, k - 1)), 1e-12) << "n=" << n;
  }
  // A hostile file's 300,000 repetitions of one cell: the normal approximation's k, to a few ranks
  // (n/2 - 2.5758 sqrt(n)/2 = 149,295), at just over 99%.
  std::vector<double> many(300000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i + 1);
  const MedianInterval wide = median_interval(many, 0.99);
  EXPECT_NEAR(wide.low, 149295, 3);
  EXPECT_DOUBLE_EQ(wide.high, 300001 - wide.low);
  EXPECT_GE(wide.confidence, 0.99);
  EXPECT_LT(wide.confidence, 0.9905);
}

// Synthetic runs: `n` repetitions around `center` with relative noise `cv` (normal).
std::vector<double> draw(std::mt19937_64& rng, size_t n, double center, double cv) {
  std::normal_distribution<double> noise(0.0, cv);
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(center * (1.0 + noise(rng)));
  return out;
}

ResultFile one_series(const std::vector<double>& times) {
  ResultFile f;
  Series s;
  s.name = "early_exit/x";
  s.times_us = times;
  f.series = {s};
  return f;
}

TEST(CompareAA, SameDistributionIsNeitherAClaimNorSame) {
  std::mt19937_64 rng(20261130);
  constexpr int kTrials = 4000;
  int ambiguous = 0, other = 0;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<double> a = draw(rng, 5, 100.0, 0.02), b = draw(rng, 5, 100.0, 0.02);
    const Verdict v = compare(one_series(a), one_series(b))[0].verdict;
    ambiguous += v == Verdict::ambiguous;
    other += v != Verdict::ambiguous;
  }
  // Two runs are two processes: the interval widened by the drift allowance never fits the margin.
  EXPECT_EQ(ambiguous, kTrials);
  EXPECT_EQ(other, 0);
}

TEST(CompareAA, DriftBetweenRunsIsNeverAClaim) {
  // What sank the old --compare: a whole run shifted by up to 40% (the machine's state), with a
  // tight spread inside each run. The cells separate; within the drift allowance that is no claim.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> drift(-0.4, 0.4);
  constexpr int kTrials = 2000;
  int claims = 0;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<double> a = draw(rng, 8, 100.0, 0.005), b = draw(rng, 8, 100.0 * (1 + drift(rng)), 0.005);
    const Verdict v = compare(one_series(a), one_series(b))[0].verdict;
    claims += v == Verdict::faster || v == Verdict::slower;
  }
  EXPECT_EQ(claims, 0);
}

TEST(CompareAA, MuchSlowerIsSlowerTwentyPercentIsAmbiguous) {
  std::mt19937_64 rng(11);
  constexpr int kTrials = 2000;
  int slower = 0, faster = 0, ambiguous = 0, wrong = 0;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<double> a = draw(rng, 5, 100.0, 0.03), b = draw(rng, 5, 250.0, 0.03);
    slower += compare(one_series(a), one_series(b))[0].verdict == Verdict::slower;
    faster += compare(one_series(b), one_series(a))[0].verdict == Verdict::faster;
    // one benchmark 20% slower between two runs: apart, but within what runs drift apart
    const Verdict v = compare(one_series(a), one_series(draw(rng, 5, 120.0, 0.03)))[0].verdict;
    ambiguous += v == Verdict::ambiguous;
    wrong += v == Verdict::faster;
  }
  EXPECT_GE(slower, kTrials * 0.95);
  EXPECT_GE(faster, kTrials * 0.95);
  EXPECT_GE(ambiguous, kTrials * 0.95);
  EXPECT_EQ(wrong, 0);
}

TEST(CompareAA, MinimumEffectTooFewRepetitionsAndSummary) {
  // 2x slower, perfectly separated: over 1.7 x 1.05; under 1.7 x 1.25 it is ambiguous.
  const ResultFile a = one_series({100, 100.1, 100.2, 100.3, 100.4}), b = one_series({200, 200.1, 200.2, 200.3, 200.4});
  EXPECT_EQ(compare(a, b)[0].verdict, Verdict::slower);
  EXPECT_EQ(compare(a, b, 0.25)[0].verdict, Verdict::ambiguous);
  // 3 + 3 repetitions cannot reach a 99% interval even fully separated: no verdict.
  const Comparison few = compare(one_series({1, 1.1, 1.2}), one_series({3, 3.1, 3.2}))[0];
  EXPECT_EQ(few.verdict, Verdict::too_few_repetitions);
  EXPECT_FALSE(few.ratio.bounded());
  std::vector<Comparison> rows(7);
  rows[0].verdict = rows[1].verdict = Verdict::faster;
  rows[2].verdict = Verdict::slower;
  rows[3].verdict = rows[4].verdict = Verdict::same;
  rows[5].verdict = Verdict::too_few_repetitions;
  rows[6].verdict = Verdict::ambiguous;
  const ComparisonSummary sum = summarize(rows);
  EXPECT_EQ(sum.faster, 2);
  EXPECT_EQ(sum.slower, 1);
  EXPECT_EQ(sum.same, 2);
  EXPECT_EQ(sum.ambiguous, 1);
  EXPECT_EQ(sum.too_few, 1);
}

TEST(Stability, WorkIndependentStrategiesMustTakeTheSameTimeEverywhere) {
  // masked does the same FLOPs in every scenario; fused does not (its time may follow the exits).
  Group g = group_of({{{"torch/masked", "exit:1"}, {2600, 2610, 2590, 2605, 2595}},
                      {{"torch/masked", "mix:late"}, {74000, 73000, 75000, 74500, 73500}},
                      {{"native/fused", "exit:1"}, {1, 1.01, 0.99, 1, 1}},
                      {{"native/fused", "mix:late"}, {50, 51, 49, 50, 50}}});
  for (const char* scenario : {"exit:1", "mix:late"})
    g.cells[{"torch/masked", scenario}].counters["flops_executed"] = 25600;
  g.cells[{"native/fused", "exit:1"}].counters["flops_executed"] = 9000;
  g.cells[{"native/fused", "mix:late"}].counters["flops_executed"] = 24000;
  std::vector<std::string> evidence = flat_work_evidence({g});
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].rfind("torch/masked does the same work in every scenario (25600 FLOPs per inference) but "
                              "took 2600–74000 µs (median, exit:1 vs mix:late, intervals 2590–2610 µs and "
                              "73000–75000 µs) on cuda · X, batch 1, hidden 64, 3 blocks",
                              0),
            0u)
      << evidence[0];

  // Within noise: 4 % apart is within the tolerance; nothing to report.
  g.cells[{"torch/masked", "mix:late"}] = make_cell({2700, 2710, 2690, 2705, 2695});
  g.cells[{"torch/masked", "mix:late"}].counters["flops_executed"] = 25600;
  EXPECT_TRUE(flat_work_evidence({g}).empty());
}

ResultFile with_context(const std::map<std::string, std::string>& context) {
  ResultFile f = one_series({1, 2, 3});
  f.path = "results/run.json";
  f.context = context;
  return f;
}

TEST(Stability, TheRecordedLoadMakesARunDisturbed) {
  // Older files: Google Benchmark's load average against its CPU count (busy above half the CPUs).
  EXPECT_EQ(busy_machine_evidence(with_context({{"load_avg", "[6.2,5.1,4]"}, {"num_cpus", "2"}})),
            (std::vector<std::string>{"run.json: load average 6.20 on 2 CPUs when the run started (busy above 1.0)"}));
  EXPECT_TRUE(busy_machine_evidence(with_context({{"load_avg", "[0.55,1.01,1.29]"}, {"num_cpus", "2"}})).empty());
  EXPECT_TRUE(busy_machine_evidence(with_context({})).empty());  // the Python peer records none
  // Newer files carry the runner's own verdicts, which win over the lagging load average.
  EXPECT_TRUE(busy_machine_evidence(with_context({{"load_avg", "[6.2,5.1,4]"},
                                                  {"num_cpus", "2"},
                                                  {"condbench_machine_busy", "no"},
                                                  {"condbench_machine_busy_end", "no"}}))
                  .empty());
  const std::vector<std::string> end = busy_machine_evidence(with_context({{"condbench_machine_busy", "no"},
                                                                           {"condbench_machine_busy_end", "yes"},
                                                                           {"condbench_running_end", "2.0"},
                                                                           {"condbench_loadavg_end", "4.10 2.00 1.00"},
                                                                           {"condbench_cpus", "2"}}));
  EXPECT_EQ(end, (std::vector<std::string>{"run.json: busy when the run ended (2.0 other tasks running, load average "
                                           "4.10 2.00 1.00 on 2 CPUs)"}));

  const RunCheck check = check_run({with_context({{"load_avg", "[6.2,5.1,4]"}, {"num_cpus", "2"}}),
                                    with_context({{"condbench_test_slowdown", "cpu/native/fused:1.2"}})},
                                   {});
  EXPECT_TRUE(check.disturbed());
  EXPECT_EQ(check.evidence.size(), 1u);
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_NE(check.notes[0].find("CONDBENCH_TEST_SLOWDOWN=cpu/native/fused:1.2"), std::string::npos);
  EXPECT_FALSE(check_run({with_context({})}, {}).disturbed());
}

}  // namespace
}  // namespace condbench::report

namespace condbench::report {
namespace {

Series primitive(const std::string& name, double us, std::map<std::string, double> counters) {
  Series s;
  s.name = "primitive/cpu/" + name;
  s.primitive = true;
  s.device = "cpu";
  s.primitive_name = name;
  s.times_us = {us * 1.01, us, us * 0.99};
  s.counters = std::move(counters);
  return s;
}

// One core that reads 1 MiB at 100 bytes/µs and 64 MiB at 10, and multiplies-adds at 1000 FLOPs/µs.
ResultFile machine() {
  ResultFile f;
  f.series = {primitive("read_bandwidth_64MiB", 67108864.0 / 10, {{"bytes", 67108864}}),
              primitive("read_bandwidth_1MiB", 1048576.0 / 100, {{"bytes", 1048576}}),
              primitive("fma_peak", 2.0, {{"flops", 2000}}), primitive("torch_op", 0.5, {})};
  return f;
}

TEST(Floors, TheRateOfTheLargestBufferNoLargerThanTheBytes) {
  const auto limits = cpu_limits({machine()});
  ASSERT_EQ(limits.size(), 1u);
  const CpuLimits& l = limits.begin()->second;
  ASSERT_EQ(l.read.size(), 2u);
  EXPECT_EQ(l.read[0].primitive, "read_bandwidth_1MiB");  // sorted by size, not by name or order
  EXPECT_DOUBLE_EQ(*l.read_rate(1000), 100);              // below every buffer: the smallest one's rate
  EXPECT_DOUBLE_EQ(*l.read_rate(1048576), 100);
  EXPECT_DOUBLE_EQ(*l.read_rate(67108863), 100);  // just under 64 MiB: the 1 MiB buffer's rate
  EXPECT_DOUBLE_EQ(*l.read_rate(67108864), 10);
  EXPECT_DOUBLE_EQ(*l.read_rate(1e12), 10);
  EXPECT_DOUBLE_EQ(*l.flops_per_us, 1000);
  EXPECT_DOUBLE_EQ(*l.torch_op_us, 0.5);
}

TEST(Floors, TheClosestBufferBelowNotAFasterSmallerOne) {
  // Past the last-level cache the rate halves: a 25 MiB step is read at the 24 MiB buffer's rate,
  // not at the 8 MiB one's, which would make its floor half what the machine can do.
  ResultFile f;
  f.series = {primitive("read_bandwidth_8MiB", 8388608.0 / 80, {{"bytes", 8388608}}),
              primitive("read_bandwidth_16MiB", 16777216.0 / 55, {{"bytes", 16777216}}),
              primitive("read_bandwidth_24MiB", 25165824.0 / 40, {{"bytes", 25165824}}),
              primitive("read_bandwidth_32MiB", 33554432.0 / 33, {{"bytes", 33554432}})};
  const CpuLimits l = cpu_limits({f}).begin()->second;
  EXPECT_DOUBLE_EQ(*l.read_rate(8.7e6), 80);
  EXPECT_DOUBLE_EQ(*l.read_rate(26.3e6), 40);
  EXPECT_DOUBLE_EQ(*l.read_rate(33554432), 33);
  EXPECT_DOUBLE_EQ(*l.read_rate(1e9), 33);
  EXPECT_FALSE(l.flops_per_us);  // not measured: no compute floor, so no floor at all
}

TEST(Floors, TwoFilesOfOneMachineGiveOneRatePerBufferWhateverTheirOrder) {
  ResultFile slow, fast;
  slow.series = {primitive("read_bandwidth_1MiB", 1048576.0 / 50, {{"bytes", 1048576}})};
  fast.series = {primitive("read_bandwidth_1MiB", 1048576.0 / 80, {{"bytes", 1048576}})};
  for (const auto& files : {std::vector<ResultFile>{slow, fast}, std::vector<ResultFile>{fast, slow}}) {
    const CpuLimits l = cpu_limits(files).begin()->second;
    ASSERT_EQ(l.read.size(), 1u);
    EXPECT_DOUBLE_EQ(*l.read_rate(2e6), 80);  // the faster: a floor stays a floor
  }
}

TEST(Floors, MemoryComputeAndCalls) {
  const CpuLimits l = cpu_limits({machine()}).begin()->second;
  Cell c;
  c.counters = {{"bytes_read", 5000}, {"flops_executed", 20000}, {"launches", 10}};
  // memory 5000 / 100 = 50 µs, compute 20000 / 1000 = 20 µs: memory-bound, 50 µs
  auto f = floor_of(l, c, "native");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->us, 50);
  EXPECT_STREQ(f->bound(), "memory");
  // the torch engine pays each operator call on top: 10 x 0.5 µs
  f = floor_of(l, c, "torch");
  EXPECT_DOUBLE_EQ(f->us, 55);
  c.counters["flops_executed"] = 200000;  // 200 µs of multiply-adds
  EXPECT_STREQ(floor_of(l, c, "native")->bound(), "compute");
  EXPECT_DOUBLE_EQ(floor_of(l, c, "native")->us, 200);
  // a strategy that does not know what it reads has no floor
  c.counters.erase("bytes_read");
  EXPECT_FALSE(floor_of(l, c, "native"));
  // nor does a run without the primitives
  EXPECT_TRUE(cpu_limits({}).empty());
  // nor a cell whose counters make no time (another machine's file can say anything)
  c.counters = {{"bytes_read", 0}, {"flops_executed", 0}};
  EXPECT_FALSE(floor_of(l, c, "native"));
  c.counters = {{"bytes_read", -5000}, {"flops_executed", -20000}, {"launches", -10}};
  EXPECT_FALSE(floor_of(l, c, "torch"));
}

}  // namespace
}  // namespace condbench::report
