// The tests' reference itself: computed on every core, row by row, it must give exactly what one row
// at a time gives (each row writes only its own slot).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "condbench/model.h"
#include "reference.h"

namespace condbench::testing {
namespace {

ModelConfig mlp(int hidden) {
  ModelConfig c = model_config("mlp");
  c.set("hidden", hidden);
  return c;
}

TEST(Reference, RowsOnEveryCoreEqualRowsOneAtATime) {
  for (const ModelConfig& config : {mlp(100), [] {
                                      ModelConfig t = model_config("transformer");
                                      t.set("d_model", 32).set("heads", 4).set("ffn", 48).set("seq", 6).blocks = 2;
                                      return t;
                                    }()}) {
    const EarlyExitModel model(config, 7);
    const FlatParameters params = model->flat_parameters();
    const at::Tensor x = seeded_input(config, 37, 5);
    const ReferenceHeads all = reference_heads(config, params, x);
    ASSERT_EQ(all.logits.size(), 37u);
    for (int64_t r = 0; r < 37; ++r) {
      const ReferenceHeads one = reference_heads(config, params, x.narrow(0, r, 1));
      EXPECT_EQ(all.logits[r], one.logits[0]) << "row " << r;
      EXPECT_EQ(all.magnitude[r], one.magnitude[0]) << "row " << r;
      EXPECT_EQ(all.confidence[r], one.confidence[0]) << "row " << r;
    }
  }
}

// A measurement, not a test (run by hand: --gtest_also_run_disabled_tests --gtest_filter=*Speed*):
// the GPU tests' largest reference, hidden 4100, 256 rows.
TEST(Reference, DISABLED_SpeedAtHidden4100) {
  const ModelConfig config = mlp(4100);
  const EarlyExitModel model(config, 7);
  const FlatParameters params = model->flat_parameters();
  const at::Tensor x = seeded_input(config, 256, 5);
  const auto start = std::chrono::steady_clock::now();
  const ReferenceHeads heads = reference_heads(config, params, x);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("reference_heads, hidden 4100, 256 rows: %.2f s on %u threads\n", seconds,
              std::thread::hardware_concurrency());
  EXPECT_EQ(heads.logits.size(), 256u);
}

}  // namespace
}  // namespace condbench::testing
