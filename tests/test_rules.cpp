// python/condbench/rules.json is the rules C++ owns, as data for the Python package (rules.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace condbench
