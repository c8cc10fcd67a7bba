// A model file compiled for CUDA, on a GPU: every CUDA strategy that can run it agrees with the
// module's own forward (reference.pt, the module run on the GPU by python/condbench/model_file.py) on
// the 64 reference rows, at batch 1, 7 and 64, with thresholds that send every row to each exit in
// turn and with each exit's median score (a mix). The folder is compiled on the GPU machine
// (scripts/device-check --call 2: model_file.py compile examples/models/mlp.py --device cuda) and
// named by CONDBENCH_TEST_MODEL_FILE; without it, or without a GPU, the test skips saying so.
// A graph strategy whose capture AOTInductor's code refuses skips the model with the reason
// (NotRunnable), printed here ("not runnable: ...", which scripts/device-check puts in its summary);
// every strategy that captures nothing must run it: the torch engine's eager_host, masked and
// eager_host_pinned, and the aoti engine's packages the folder holds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "condbench/model_file.h"
#include "condbench/strategy.h"
#include "condbench/workload.h"
#include "gpu_test_support.h"

namespace condbench::testing {
namespace {

// Thresholds sending every row to exit 1, then 2, ..., then the final head (a score is in (0, 1]:
// threshold 0 takes every row, 1 none), and each exit's median score over the reference rows.
std::vector<std::vector<float>> threshold_sets(const ModelFileFamily& family, int blocks) {
  std::vector<std::vector<float>> sets;
  for (int k = 0; k <= blocks; ++k) {
    std::vector<float> t(static_cast<size_t>(blocks), 1.0f);
    if (k < blocks) t[static_cast<size_t>(k)] = 0.0f;
    sets.push_back(t);
  }
  std::vector<float> mix;
  for (const at::Tensor& score : family.reference().confidence) mix.push_back(score.median().item<float>());
  sets.push_back(mix);
  return sets;
}

TEST(CudaModelFile, EveryStrategyAgreesWithTheModule) {
  skip_without_gpu();
  const char* folder = std::getenv("CONDBENCH_TEST_MODEL_FILE");
  if (folder == nullptr || *folder == '\0')
    GTEST_SKIP() << "no model file compiled for CUDA named in CONDBENCH_TEST_MODEL_FILE (scripts/device-check "
                    "--call 2 compiles one)";
  const ModelFileFamily& family = load_model_file(folder);
  ASSERT_EQ(family.device(), Device::cuda) << family.description();
  ModelSource source;
  source.config = family.config();
  const EarlyExitModel model = shared_model(source);
  const int blocks = model->config().blocks;
  const std::vector<std::vector<float>> sets = threshold_sets(family, blocks);

  std::set<std::string> ran;
  for (const StrategyInfo& info : StrategyRegistry::instance().of<StrategyInfo>()) {
    if (info.device != Device::cuda) continue;
    for (const int64_t batch : {1, 7, 64}) {
      const std::string what = info.key() + " at batch " + std::to_string(batch);
      if (const Unsupported why = info.unsupported(model->config(), batch)) {
        std::cout << "  " << what << ": unsupported: " << *why << "\n";
        continue;
      }
      std::unique_ptr<Strategy> strategy = info.make();
      try {
        strategy->prepare(model, batch);
      } catch (const NotRunnable& e) {
        std::cout << "  " << what << ": not runnable: " << e.what() << "\n";
        break;  // the same capture at every batch
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": prepare: " << e.what();
        continue;
      }
      for (const std::vector<float>& thresholds : sets) try {
          check_against_module(*strategy, family, thresholds, batch);
        } catch (const std::exception& e) {
          ADD_FAILURE() << what << ", thresholds " << ::testing::PrintToString(thresholds) << ": " << e.what();
        }
      std::cout << "  " << what << ": agrees with the module on " << family.reference().input.size(0) << " rows x "
                << sets.size() << " threshold sets\n";
      ran.insert(info.key());
    }
  }
  std::vector<std::string> must = {"cuda/torch/eager_host", "cuda/torch/masked", "cuda/torch/eager_host_pinned"};
  for (const char* module : {"cond", "masked"})
    if (!family.whole_model(module)->path.empty()) must.push_back(std::string("cuda/aoti/") + module);
  for (const std::string& key : must) EXPECT_TRUE(ran.count(key)) << key << " did not run the model file";
}

}  // namespace
}  // namespace condbench::testing
