// The CPU fused strategy's exit test (strategies/native/cpu/vector_confidence.h) at both vector
// widths whatever this machine has: its exponential against double over the whole range softmax
// uses, and its confidence against the scalar math::max_softmax and a double softmax — every
// class count around the vector widths, the boundary cases the exit rule relies on, and the
// special values (infinities, NaN) a corrupted model can produce. The confidence reads whole
// vectors: what lies past the logits (a huge value, NaN) must never reach the result.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "condbench/exit_math.h"
#include "condbench/random.h"
#include "native/cpu/vector_confidence.h"

namespace condbench::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// One value through exp_nonpositive, in lane `lane` of a vector whose other lanes hold 0.
template <int Lanes>
float vector_exp(float x, int lane = 0) {
  simd::Vec<Lanes> v = simd::Vec<Lanes>{};
  v[lane] = x;
  cpu::exp_nonpositive<Lanes>(v);
  return v[lane];
}

double ulps(float got, double want) {
  const float nearest = static_cast<float>(want);
  const double ulp = static_cast<double>(std::nextafter(nearest, kInf)) - nearest;
  return std::abs(got - want) / ulp;
}

template <int Lanes>
void check_exp() {
  SCOPED_TRACE("lanes=" + std::to_string(Lanes));
  double worst = 0;
  // Every representable step would take minutes; this grid hits each binade of [-87.3, 0]
  // thousands of times, at irregular offsets from multiples of ln 2.
  for (float x = -87.3f; x <= 0.0f; x += 0.000731f) {
    const double want = std::exp(static_cast<double>(x));
    if (want < std::numeric_limits<float>::min()) continue;  // below it the result is 0 on purpose
    worst = std::max(worst, ulps(vector_exp<Lanes>(x, static_cast<int>(-x) % Lanes), want));
  }
  EXPECT_LE(worst, 1.0) << "worst error in ulps";
  EXPECT_EQ(vector_exp<Lanes>(0.0f), 1.0f);  // exact: the largest logit contributes exactly 1
  EXPECT_EQ(vector_exp<Lanes>(-0.0f), 1.0f);
  EXPECT_EQ(vector_exp<Lanes>(-90.0f), 0.0f);
  EXPECT_EQ(vector_exp<Lanes>(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(vector_exp<Lanes>(std::numeric_limits<float>::quiet_NaN())));
}

TEST(VectorConfidence, ExpIsWithinOneUlpAndExactAtZero) {
  check_exp<8>();
  check_exp<16>();
}

double double_max_softmax(const std::vector<float>& logits) {
  double m = logits[0];
  for (float l : logits) m = std::max(m, static_cast<double>(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(l - m);
  return 1.0 / sum;
}

template <int Lanes>
void check_confidence(uint64_t seed) {
  SplitMix64 rng(seed);
  for (int n = 1; n <= 3 * Lanes + 1; ++n)
    for (const float scale : {0.01f, 1.0f, 8.0f, 60.0f}) {
      SCOPED_TRACE("lanes=" + std::to_string(Lanes) + " classes=" + std::to_string(n) +
                   " scale=" + std::to_string(scale));
      // Logits in the middle of a larger buffer filled with a huge value: nothing outside
      // [0, n) may be read into the result.
      std::vector<float> buffer(n + 2 * Lanes, 1e30f);
      float* logits = buffer.data() + Lanes;
      for (int j = 0; j < n; ++j) logits[j] = scale * (2.0f * static_cast<float>(rng.uniform()) - 1.0f);
      const float got = cpu::max_softmax<Lanes>(logits, n);
      const double want = double_max_softmax(std::vector<float>(logits, logits + n));
      // A float sum of n terms is within n units in the last place of the exact one; a few more
      // for the exponentials (1 ulp each) and the division.
      const double bound = (8 + n) * std::ldexp(1.0, -24) * want;
      EXPECT_NEAR(got, want, bound);
      EXPECT_NEAR(got, math::max_softmax(logits, n), 2 * bound);
    }
}

TEST(VectorConfidence, MatchesTheScalarExitTestAndADoubleSoftmax) {
  check_confidence<8>(1);
  check_confidence<16>(2);
}

// The vector confidence of `logits`, read from a copy followed by a vector of `pad` (fused's
// buffers are padded so; what the padding holds must not matter).
template <int Lanes>
float padded_confidence(std::vector<float> logits, float pad = std::numeric_limits<float>::quiet_NaN()) {
  const int n = static_cast<int>(logits.size());
  logits.resize(logits.size() + Lanes, pad);
  return cpu::max_softmax<Lanes>(logits.data(), n);
}

template <int Lanes>
void check_special_values() {
  SCOPED_TRACE("lanes=" + std::to_string(Lanes));
  for (int n : {1, 4, 10, Lanes, Lanes + 1, 3 * Lanes}) {
    // Equal logits: exactly 1/n, as in the scalar form (the equivalence tests' ties rely on it).
    const std::vector<float> equal(n, 3.0f);
    EXPECT_EQ(padded_confidence<Lanes>(equal), math::max_softmax(equal.data(), n)) << n;
    EXPECT_EQ(padded_confidence<Lanes>(equal), 1.0f / static_cast<float>(n)) << n;
    EXPECT_EQ(padded_confidence<Lanes>(equal, 1e30f), 1.0f / static_cast<float>(n)) << n;
  }
  // One overwhelming logit: the confidence is exactly 1 (the others' exponentials vanish), so a
  // threshold of 1 still never fires.
  const std::vector<float> sure = {-200.0f, 0.0f, -150.0f, -kInf, -300.0f};
  EXPECT_EQ(padded_confidence<Lanes>(sure), 1.0f);
  EXPECT_FALSE(math::exit_fires(padded_confidence<Lanes>(sure), 1.0f));
  // NaN anywhere, +inf, or every logit -inf: the confidence is NaN, as the scalar form's, and no
  // threshold fires on it.
  for (int at = 0; at < 5; ++at) {
    std::vector<float> bad = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f};
    bad[at] = std::numeric_limits<float>::quiet_NaN();
    const float c = padded_confidence<Lanes>(bad, 0.0f);
    EXPECT_TRUE(std::isnan(c)) << "NaN at " << at;
    EXPECT_TRUE(std::isnan(math::max_softmax(bad.data(), 5))) << "NaN at " << at;
    EXPECT_FALSE(math::exit_fires(c, 0.0f));
  }
  EXPECT_TRUE(std::isnan(padded_confidence<Lanes>({1.0f, kInf, 0.0f})));
  EXPECT_TRUE(std::isnan(padded_confidence<Lanes>({-kInf, -kInf})));
}

TEST(VectorConfidence, KeepsTheScalarFormsBoundariesAndSpecialValues) {
  check_special_values<8>();
  check_special_values<16>();
}

}  // namespace
}  // namespace condbench::testing
