// The shared math of exit_math.h (the code the CPU fused loop and the CUDA kernels run) against
// LibTorch, including the boundary of the exit test.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "condbench/agreement.h"
#include "condbench/exit_math.h"
#include "condbench/native_model.h"
#include "condbench/torch_exit_rule.h"
#include "reference.h"

namespace condbench::testing {
namespace {

TEST(ExitMath, LinearPartialRowsMatchTorchLinear) {
  for (auto [in, out] : {std::pair{1, 1}, {32, 64}, {64, 10}, {100, 33}, {7, 45}, {1024, 1024}}) {
    const at::Tensor w = at::randn({out, in}), b = at::randn({out}), x = at::randn({in});
    const at::Tensor want = at::linear(x, w, b);
    NativeModel native = NativeModel::from_parameters(
        mlp_config(in, out, 1, 1),
        {std::vector<float>(w.data_ptr<float>(), w.data_ptr<float>() + w.numel()),
         std::vector<float>(b.data_ptr<float>(), b.data_ptr<float>() + b.numel()), std::vector<float>(out),
         std::vector<float>(1), std::vector<float>(out), std::vector<float>(1)});
    const NativeLinear& l = native.blocks[0];
    // The GPU kernels' form: the sum over i in slices (math::linear_partial_rows) added to the
    // bias, for three rows at once (x, 2x and -x, so each row's sum is known from the first's).
    const at::Tensor x2 = x * 2, xn = -x;
    const float* const rows[3] = {x.data_ptr<float>(), x2.data_ptr<float>(), xn.data_ptr<float>()};
    for (int o = 0; o < out; ++o) {
      const int slices = 8, chunk = (in + slices - 1) / slices;
      float acc[3] = {l.bias[o], 2 * l.bias[o], -l.bias[o]};
      for (int s = 0; s < slices; ++s) {
        float part[3];
        math::linear_partial_rows<3>(l.wt.data(), rows, std::min(in, s * chunk), std::min(in, s * chunk + chunk),
                                     l.pitch, o, part);
        for (int r = 0; r < 3; ++r) acc[r] += part[r];
      }
      const float tolerance = 1e-5 * std::max(1.0f, std::abs(want[o].item<float>())) * std::sqrt(in);
      EXPECT_NEAR(acc[0], want[o].item<float>(), tolerance);
      EXPECT_NEAR(acc[1], 2 * want[o].item<float>(), 2 * tolerance);
      EXPECT_NEAR(acc[2], -want[o].item<float>(), tolerance);
    }
  }
}

TEST(ExitMath, MaxSoftmaxMatchesTorch) {
  for (int n : {1, 2, 10, 1000}) {
    for (float scale : {0.01f, 1.0f, 30.0f}) {
      const at::Tensor logits = at::randn({n}) * scale;
      const float want = at::softmax(logits, 0).max().item<float>();
      EXPECT_NEAR(math::max_softmax(logits.data_ptr<float>(), n), want, 2e-6 * want) << n << " " << scale;
    }
  }
  const float equal[4] = {3.0f, 3.0f, 3.0f, 3.0f};
  EXPECT_EQ(math::max_softmax(equal, 4), 0.25f);  // exact: the boundary tests rely on it
}

TEST(ExitMath, ExitFiresOnlyAboveItsThreshold) {
  EXPECT_FALSE(math::exit_fires(0.5f, 0.5f));
  EXPECT_TRUE(math::exit_fires(std::nextafter(0.5f, 1.0f), 0.5f));
  EXPECT_FALSE(math::exit_fires(1.0f, 1.0f));   // t = 1 never fires
  EXPECT_TRUE(math::exit_fires(1e-30f, 0.0f));  // t = 0 always fires for a softmax max
  // the tensor twin (torch_exit_rule.h) agrees on the boundary and beside it, with a float threshold
  // and with a 0-d tensor one (what a captured graph reads)
  for (const float c : {0.1f, std::nextafter(0.1f, 1.0f), std::nextafter(0.1f, 0.0f)}) {
    const at::Tensor conf = at::full({1}, c);
    EXPECT_EQ(math::exit_fires(conf, 0.1f).item<bool>(), math::exit_fires(c, 0.1f)) << c;
    EXPECT_EQ(math::exit_fires(conf, at::scalar_tensor(0.1f)).item<bool>(), math::exit_fires(c, 0.1f)) << c;
  }
}

TEST(ExitMath, AScoreTheRuleCanTakeIsInZeroToOne) {
  const float nan = std::nanf("");
  for (const auto& [score, in] : std::vector<std::pair<float, bool>>{{1.0f, true},
                                                                     {1e-30f, true},
                                                                     {0.5f, true},
                                                                     {0.0f, false},
                                                                     {-0.0f, false},
                                                                     {std::nextafter(1.0f, 2.0f), false},
                                                                     {1.5f, false},
                                                                     {nan, false}}) {
    EXPECT_EQ(math::score_in_range(score), in) << score;
    EXPECT_EQ(math::scores_in_range(at::full({3}, score)), in) << score;  // the tensor twin
  }
  EXPECT_FALSE(math::scores_in_range(at::tensor({0.5f, 1.5f, 0.5f})));  // one is enough
}

TEST(Agreement, IdsMustMatchAndLogitsBeClose) {
  const at::Tensor ids = at::tensor({1, 2}, at::kInt), logits = at::tensor({1.0f, -2.0f, 0.5f, 0.0f}).view({2, 2});
  EXPECT_TRUE(results_agree(ids, logits, ids, logits));
  EXPECT_TRUE(results_agree(ids, logits * (1 + 5e-5), ids, logits));
  EXPECT_FALSE(results_agree(ids, logits * (1 + 5e-4), ids, logits));
  EXPECT_FALSE(results_agree(at::tensor({1, 3}, at::kInt), logits, ids, logits));
}

}  // namespace
}  // namespace condbench::testing
