// condbench-report's reader of result files (report/result_file.cpp): repetitions, counters and
// errors from the small fixture, and names whose axes no reader knows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "analysis.h"
#include "condbench/error.h"
#include "document.h"
#include "render.h"
#include "report_test_support.h"
#include "result_file.h"

namespace condbench::report {
namespace {

using test_support::fixture_path;

const std::string kFixture = fixture_path();

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

TEST(ResultFileTest, TheGpuTimeOfEveryRepetitionIsReadAndAnOldSpanIsCalledASpan) {
  const auto entry = [](const std::string& strategy, int rep, double gpu, double syncs) {
    const std::string name = "early_exit/cuda/" + strategy + "/exit:1/batch:1/hidden:64/blocks:3";
    return R"({"name": ")" + name + R"(", "run_name": ")" + name +
           R"(", "run_type": "iteration", "repetition_index": )" + std::to_string(rep) +
           R"(, "real_time": 50, "time_unit": "us", "gpu_us": )" + std::to_string(gpu) + R"(, "host_syncs": )" +
           std::to_string(syncs) + "}";
  };
  const ResultFile f = parse_result_file("gpu.json", R"({"context": {"condbench_schema": "1"}, "benchmarks": [)" +
                                                         entry("torch/masked_graph", 0, 44.5, 0) + "," +
                                                         entry("torch/masked_graph", 1, 44.9, 0) + "," +
                                                         entry("torch/eager_host", 0, 299, 2) + "]}");
  ASSERT_EQ(f.series.size(), 2u);
  EXPECT_EQ(f.series[0].gpu_us, (std::vector<double>{44.5, 44.9}));
  // a host-deciding strategy's gpu_us, from before gpu_span_us had its own name, is a span
  EXPECT_TRUE(f.series[1].gpu_us.empty());
  EXPECT_FALSE(f.series[1].counters.count("gpu_us"));
  EXPECT_DOUBLE_EQ(f.series[1].counters.at("gpu_span_us"), 299);
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
  // its heading's short form: its family and each axis no reader knows as key=value, ×N its blocks
  EXPECT_EQ(groups[1].model_short(), "rnn units=128 cell=gru ×2");
  EXPECT_NE(md.find("#### rnn units=128 cell=gru ×2 · batch 1"), std::string::npos) << md;
  EXPECT_NE(md.find("| rnn units=128 cell=gru ×2 · batch 1 | mix:early |"), std::string::npos);
}

}  // namespace
}  // namespace condbench::report
