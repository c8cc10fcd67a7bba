// The benchmark name type: what the runner builds is what every reader parses back, part by part.
#include <gtest/gtest.h>

#include "condbench/result_format.h"

namespace condbench {
namespace {

TEST(BenchmarkName, BuildsAndParsesTheRunnersNames) {
  const std::string text = "early_exit/cpu/native/fused/exit:2/batch:64/hidden:1024/blocks:3";
  const BenchmarkName built = BenchmarkName()
                                  .label("early_exit")
                                  .label("cpu")
                                  .label("native")
                                  .label("fused")
                                  .axis("exit", "2")
                                  .axis("batch", "64")
                                  .axis("hidden", "1024")
                                  .axis("blocks", "3");
  EXPECT_EQ(built.str(), text);
  const std::optional<BenchmarkName> parsed = BenchmarkName::parse(text);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, built);
  EXPECT_EQ(parsed->labels(), (std::vector<std::string>{"early_exit", "cpu", "native", "fused"}));
  EXPECT_EQ(parsed->scenario(), "exit:2");
  EXPECT_EQ(parsed->axis_value("batch"), "64");
  EXPECT_EQ(parsed->axis_value("seq"), std::nullopt);
  EXPECT_EQ(parsed->without_axes(), "early_exit/cpu/native/fused");
  EXPECT_EQ(BenchmarkName::parse("early_exit/cpu/torch/masked/mix:early/batch:1")->scenario(), "mix:early");
}

TEST(BenchmarkName, KeepsUnknownAxesInTheirPlace) {
  const std::string text = "early_exit/cuda/torch/graph_cond/exit:1/batch:1/seq:128/hidden:64/blocks:3";
  const std::optional<BenchmarkName> parsed = BenchmarkName::parse(text);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->str(), text);
  EXPECT_EQ(parsed->axis_value("seq"), "128");
  ASSERT_EQ(parsed->parts().size(), 9u);
  EXPECT_EQ(parsed->parts()[6].key, "seq");
}

TEST(BenchmarkName, RefusesWhatIsNotPartsAndAxes) {
  for (const char* bad : {"", "a//b", "a/", "/a", "a/:1", "a/k:", "a/k:1:2"})
    EXPECT_FALSE(BenchmarkName::parse(bad)) << bad;
  EXPECT_TRUE(BenchmarkName::parse("primitive/cuda/launch"));
  EXPECT_FALSE(BenchmarkName::parse("primitive/cuda/launch")->scenario());
}

}  // namespace
}  // namespace condbench
