// The aoti engine's packages as files: what a missing, foreign or damaged one gives (a reason to
// skip, or one line of error), never a crash. The packages themselves are checked against the
// reference in test_equivalence.cpp.
#include <gtest/gtest.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "aoti/aoti_package.h"
#include "condbench/agreement.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/model.h"

namespace condbench::testing {
namespace {

namespace fs = std::filesystem;

// CONDBENCH_AOTI_DIR pointed at an empty folder for the test's life, then restored.
class AotiPackagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("CONDBENCH_AOTI_DIR")) saved_ = old;
    dir_ = fs::temp_directory_path() / ("condbench-aoti-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("CONDBENCH_AOTI_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_)
      ::setenv("CONDBENCH_AOTI_DIR", saved_->c_str(), 1);
    else
      ::unsetenv("CONDBENCH_AOTI_DIR");
    fs::remove_all(dir_);
  }

  // Writes `package` bytes and `description` text where the cond package of `config` belongs.
  static void place(const ModelConfig& config, const std::string& package, const std::string& description) {
    const fs::path path = aoti::package_path(config, Device::cpu, "cond");
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << package;
    std::ofstream(fs::path(path).replace_extension(".json"), std::ios::binary) << description;
  }

  static std::string description_of(const ModelConfig& c, const std::string& torch_version) {
    return R"({"torch_version": ")" + torch_version + R"(", "config": {"in_features": )" +
           std::to_string(c.size("in_features")) + R"(, "hidden": )" + std::to_string(c.size("hidden")) +
           R"(, "num_classes": )" + std::to_string(c.num_classes) + R"(, "blocks": )" + std::to_string(c.blocks) +
           R"(}, "compile_s": 1.5, "export_s": 0.5, "options": "default"})";
  }

  static const StrategyInfo& cond() {
    return *StrategyRegistry::instance().find<StrategyInfo>(Device::cpu, Engine::aoti, "cond");
  }

  fs::path dir_;
  std::optional<std::string> saved_;
};

TEST_F(AotiPackagesTest, AMissingPackageIsASkipThatSaysHowToMakeIt) {
  const Unsupported why = cond().unsupported(model_config("mlp"), 1);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no AOTInductor package"), std::string::npos) << *why;
  EXPECT_NE(why->find("-m condbench.aoti --device=cpu --modules=cond "
                      "--config=mlp:in_features=32,hidden=64,num_classes=10,blocks=3"),
            std::string::npos)
      << *why;
  EXPECT_FALSE(cond().build_note(model_config("mlp"), Device::cpu));
}

TEST_F(AotiPackagesTest, OnlyOneRowForCondWhateverThePackages) {
  const Unsupported why = cond().unsupported(model_config("mlp"), 2);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("batch 1 only"), std::string::npos) << *why;
}

TEST_F(AotiPackagesTest, APackageOfAnotherTorchOrModelOrAnUnreadableDescriptionIsASkip) {
  const ModelConfig config = model_config("mlp");
  place(config, "x", description_of(config, "1.0.0"));
  ASSERT_TRUE(cond().unsupported(config, 1));
  EXPECT_NE(cond().unsupported(config, 1)->find("compiled by torch 1.0.0"), std::string::npos);

  ModelConfig other = config;
  other.set("hidden", 65);
  place(config, "x", description_of(other, TORCH_VERSION));
  ASSERT_TRUE(cond().unsupported(config, 1));
  EXPECT_NE(cond().unsupported(config, 1)->find("is not of this model"), std::string::npos);

  for (const char* garbage : {"", "{", "[1, 2]", "{\"torch_version\": 2}", "\xff\xfe"}) {
    place(config, "x", garbage);
    EXPECT_TRUE(cond().unsupported(config, 1)) << garbage;
  }
}

TEST_F(AotiPackagesTest, ADamagedPackageIsOneLineOfErrorWhenPrepared) {
  const ModelConfig config = model_config("mlp");
  place(config, "not a zip archive", description_of(config, TORCH_VERSION));
  ASSERT_FALSE(cond().unsupported(config, 1));  // the description is fine; the package is read in prepare
  const EarlyExitModel model(config, 1);
  auto strategy = cond().make();
  try {
    strategy->prepare(model, 1);
    FAIL() << "prepare accepted a damaged package";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot load"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// #59: a package's loader is lent again when its strategy is made again (each repetition of an
// interleaved run), the new model's weights loaded over its constants, not made again: each load
// kept about the package's weights, and a default run grew to 15.8 GB. On the aoti_packages
// fixture's MLP (condbench's cache as it is).
TEST(AotiLoaders, AStrategyMadeAgainIsLentItsPackagesLoaderWithItsOwnWeights) {
  ModelConfig c = model_config("mlp");
  c.set("in_features", 7).set("hidden", 33);
  c.num_classes = 5;
  c.blocks = 2;
  if (const Unsupported why = aoti::package_unusable(c, Device::cpu, "masked")) GTEST_SKIP() << *why;
  const StrategyRegistry& registry = StrategyRegistry::instance();
  const StrategyInfo& deployed = *registry.find<StrategyInfo>(Device::cpu, Engine::aoti, "masked");
  const StrategyInfo& reference = *registry.find<StrategyInfo>(Device::cpu, Engine::torch, "masked");
  const at::Tensor x = at::randn({4, 7});
  const std::vector<float> thresholds = {0.3f, 0.3f};
  const auto agrees = [&](Strategy& a, Strategy& b) {
    const ExitOutput got = a.run(x, thresholds), want = b.run(x, thresholds);
    return results_agree(got.exit_id, got.logits, want.exit_id, want.logits);
  };
  const size_t before = aoti::loaders_made();
  for (const uint64_t seed : {1, 2, 1}) {  // made again three times, each time another model's weights
    const EarlyExitModel model(c, seed);
    const std::unique_ptr<Strategy> a = deployed.make(), b = reference.make();
    a->prepare(model, 4);
    b->prepare(model, 4);
    EXPECT_TRUE(agrees(*a, *b)) << "seed " << seed;
  }
  EXPECT_LE(aoti::loaders_made() - before, 1U);  // one loader, lent three times (none: lent from a test before)
  // two at once: the second gets a loader of its own, and each runs its own weights
  const EarlyExitModel one(c, 1), two(c, 2);
  const std::unique_ptr<Strategy> a1 = deployed.make(), a2 = deployed.make(), r2 = reference.make();
  a1->prepare(one, 4);
  a2->prepare(two, 4);
  r2->prepare(two, 4);
  EXPECT_TRUE(agrees(*a2, *r2));
  EXPECT_FALSE(agrees(*a1, *r2));
}

}  // namespace
}  // namespace condbench::testing
