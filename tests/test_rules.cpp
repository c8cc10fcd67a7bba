// python/condbench/rules.json is the rules C++ owns, as data for the Python package (rules.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/memory_budget.h"
#include "condbench/parameters.h"
#include "condbench/rules.h"
#include "condbench/workload.h"

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
  ASSERT_EQ(relations[kDecoderFamily].size(), decoder_family().relations().size());
  ASSERT_EQ(decoder_family().relations().size(), 2U);
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

// What MemoryNeed::require says of a need (empty: it fits the budget).
std::string over_budget(const MemoryNeed& need) {
  try {
    need.require("it");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(MemoryBudget, ANeedIsTheWeightsAndTheFamilysTermsAtItsBatch) {
  // the default mlp: 32 -> 64, 64 -> 64 twice, three exits and the final head of 10 classes
  const ModelConfig mlp = model_config("mlp");
  const double weights = (32 * 64 + 64) + 2 * (64 * 64 + 64) + 4 * (64 * 10 + 10);
  EXPECT_EQ(mlp.memory_need(0).bytes(), 4 * weights);
  // at 8 rows: the input twice, the activations four times, every exit's logits three times
  EXPECT_EQ(mlp.memory_need(8).bytes(), 4 * (weights + 8 * 32 * 2 + 8 * 64 * 4 + 8 * 10 * 3 * 3));
  const DecoderConfig decoder;
  const double cache = 4.0 * 3 * decoder.layers * decoder.context * decoder.d_model;  // 3 rows, keys and values twice
  EXPECT_GT(decoder.memory_need(3).bytes(), 4 * (parameter_floats(decoder_parameters(decoder)) + cache));
  EXPECT_EQ(over_budget(decoder.memory_need(64)), "");
}

TEST(MemoryBudget, TheInputPoolCountsAnInt64ValueAsTwoFloats) {
  // at least 1024 rows (docs/design.md §3), else the batch's; token ids take twice a float's bytes
  MemoryNeed floats, ids, large;
  Workload::add_pool_need(floats, 8, 32, /*int64_values=*/false);
  Workload::add_pool_need(ids, 8, 32, /*int64_values=*/true);
  Workload::add_pool_need(large, 4096, 32, /*int64_values=*/true);
  EXPECT_EQ(floats.bytes(), 4.0 * 1024 * 32);
  EXPECT_EQ(ids.bytes(), 8.0 * 1024 * 32);
  EXPECT_EQ(large.bytes(), 8.0 * 4096 * 32);
  Workload::add_pool_need(large, 1 << 20, 1024, /*int64_values=*/true);
  EXPECT_NE(over_budget(large).find("the input pool 1048576 rows x 1024 int64 values x 2 floats = 8 GiB"),
            std::string::npos)
      << over_budget(large);
}

TEST(MemoryBudget, ARefusalNamesTheProductAndTheBudget) {
  // condbench-infer --model=decoder --batch=65536: 65536 x 8 x 64 x 256 x 4 floats of cache, 128 GiB
  const std::string said = over_budget(DecoderConfig{}.memory_need(1 << 16));
  EXPECT_EQ(said.rfind("it: asks for ", 0), 0U) << said;
  EXPECT_NE(said.find("over condbench's memory budget of 8 GiB (docs/input.md): the key/value cache 65536 rows x 8 "
                      "layers x 64 context x 256 d_model x 4 floats = 128 GiB"),
            std::string::npos)
      << said;
  // the families' working memory: --hidden=65536 --blocks=1 --batch=65536, 64 GiB of activations
  ModelConfig wide = model_config("mlp");
  wide.set("hidden", 1 << 16).blocks = 1;
  EXPECT_EQ(refusal(wide), "");  // its weights fit
  EXPECT_NE(
      over_budget(wide.memory_need(1 << 16)).find("the activations 65536 rows x 65536 hidden x 4 floats = 64 GiB"),
      std::string::npos);
  // the weights alone, where validate refuses them (the families' 2^31 floats, the decoder's too)
  ModelConfig deep = model_config("transformer");
  deep.set("d_model", 1 << 14).set("ffn", 1 << 16).blocks = 256;
  EXPECT_NE(refusal(deep).find("over condbench's memory budget of 8 GiB"), std::string::npos) << refusal(deep);
  DecoderConfig huge;
  huge.vocab = 1 << 18;
  huge.d_model = 1 << 14;
  EXPECT_NE(refusal(huge).find("the weights "), std::string::npos) << refusal(huge);
}

TEST(MemoryBudget, RulesJsonCarriesTheBudgetAndEveryFamilysTerms) {
  const nlohmann::json budget = rules_as_data()["memory_budget"];
  EXPECT_EQ(budget["bytes"].get<double>(), kMemoryBudgetBytes);
  EXPECT_EQ(budget["says"], memory_budget_statement());
  for (const ModelFamily* family : model_families())
    EXPECT_EQ(budget["terms"][family->name()].size(), family->memory_terms(family->config()).size());
  ASSERT_EQ(budget["terms"][kDecoderFamily].size(), decoder_memory_terms().size());
  EXPECT_EQ(budget["terms"][kDecoderFamily][0]["factors"],
            nlohmann::json::array({"rows", "layers", "context", "d_model"}));
}

}  // namespace
}  // namespace condbench
