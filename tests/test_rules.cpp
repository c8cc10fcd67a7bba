// python/condbench/rules.json is the rules C++ owns, as data for the Python package (rules.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/rules.h"

namespace condbench {
namespace {

constexpr const char* kRulesFile = CONDBENCH_SOURCE_DIR "/python/condbench/rules.json";

TEST(Rules, ThePythonPackageHoldsWhatCppSays) {
  const nlohmann::json want = rules_as_data();
  if (std::getenv("CONDBENCH_WRITE_RULES") != nullptr) {
    std::ofstream(kRulesFile) << want.dump(2) << "\n";
    GTEST_SKIP() << "wrote " << kRulesFile;
  }
  std::ifstream in(kRulesFile);
  ASSERT_TRUE(in) << "cannot read " << kRulesFile;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json held = nlohmann::json::parse(text.str());
  EXPECT_EQ(held, want) << "python/condbench/rules.json is not what C++ says; write it again with "
                           "CONDBENCH_WRITE_RULES=1 build/release/tests/condbench_tests --gtest_filter=Rules.*";
}

TEST(Rules, TheExitRuleIsStatedAsItsComparison) {
  // math::exit_fires fires strictly above its threshold (ExitMath.ExitFiresOnlyAboveItsThreshold).
  EXPECT_EQ(rules_as_data()["exit_rule"]["fires_when"], "score > threshold");
}

// What `validate` says of a config (empty: it passes).
template <typename Config>
std::string refusal(const Config& config) {
  try {
    config.validate();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// Sizes that break the relation: 5 heads for a width of 32, or exit_every as many as the layers.
std::pair<int, int> breaking(const SizeRelation& r) {
  return r.kind == SizeRelation::Kind::kDivides ? std::pair{5, 32} : std::pair{4, 4};
}

TEST(Rules, EachRelationOfSizesIsCheckedAndSaidAsRulesJsonStatesIt) {
  // condbench.aoti's --config receives these and says a broken one in the same words
  // (test_package.py's test_a_configs_sizes_relate_as_cpp_relates_them)
  const nlohmann::json relations = rules_as_data()["config_relations"];
  for (const ModelFamily* family : model_families()) {
    ASSERT_EQ(relations[family->name()].size(), family->relations().size()) << family->name();
    for (const SizeRelation& r : family->relations()) {
      ModelConfig c = model_config(family->name());
      EXPECT_EQ(refusal(c), "");
      const auto [size, other] = breaking(r);
      c.set(r.size, size).set(r.other, other);
      EXPECT_EQ(refusal(c), r.violation(size, other)) << family->name();
    }
  }
  ASSERT_EQ(relations[kDecoderFamily].size(), decoder_relations().size());
  ASSERT_EQ(decoder_relations().size(), 2U);
  DecoderConfig c;
  c.heads = 5;
  c.d_model = 32;
  EXPECT_EQ(refusal(c), "heads must divide d_model (each head a slice of the width), got heads=5 d_model=32");
  c = DecoderConfig{};
  c.exit_every = c.layers = 4;
  EXPECT_EQ(refusal(c), "exit_every must be below layers (an exit before the last layer), got exit_every=4 layers=4");
  c.exit_every = 3;
  EXPECT_EQ(refusal(c), "");
  ModelConfig t = model_config("transformer");
  t.set("d_model", 32).set("heads", 5);
  EXPECT_EQ(refusal(t), "heads must divide d_model (each head a slice of the width), got heads=5 d_model=32");
}

}  // namespace
}  // namespace condbench
