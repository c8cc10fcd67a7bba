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

namespace condbench {
namespace {

std::vector<BenchmarkName::Part> axes_of(const std::string& name) { return BenchmarkId::read(name)->model; }

TEST(ModelWords, EachModelInFullAndInAHeadingsFewCharacters) {
  const auto mlp = axes_of("early_exit/cpu/native/fused/exit:1/batch:1/hidden:64/blocks:3");
  EXPECT_EQ(model_text(mlp), "hidden 64, 3 blocks");
  EXPECT_EQ(model_short(mlp), "mlp h64 ×3");
  const auto transformer = axes_of(
      "early_exit/cpu/torch/masked/exit:1/batch:1/model:transformer/d_model:256/heads:4/ffn:1024/seq:32/blocks:6");
  EXPECT_EQ(model_short(transformer), "transformer d256 a4 f1024 s32 ×6");
  // a decoder's depth is its layers: its blocks axis (the exits before the final one) is never called blocks
  const auto decoder = axes_of(
      "early_exit/cpu/torch/masked/exit:1/batch:1/model:decoder/vocab:512/d_model:256/heads:4/layers:8/ffn:1024/"
      "context:64/exit_every:2/prompt:16/generate:32/blocks:3");
  EXPECT_EQ(model_text(decoder),
            "decoder: vocab 512, d_model 256, heads 4, layers 8, ffn 1024, context 64, exit_every 2, prompt 16, "
            "generate 32");
  EXPECT_EQ(model_short(decoder), "decoder v512 d256 a4 L8 f1024 c64 e2 p16 g32");
  // a model file's module is named by its file
  EXPECT_EQ(model_short(axes_of("early_exit/cpu/aoti/cond/exit:1/batch:1/model:cnn.py/blocks:3")), "cnn.py ×3");
}

}  // namespace
}  // namespace condbench
