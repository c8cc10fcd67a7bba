#pragma once
// The CPU `fused` strategy's exit test: max(softmax(logits)), the quantity math::max_softmax
// defines (exit_math.h), computed in vectors. The scalar form calls expf once per class; here the
// exponentials are a polynomial evaluated for Lanes classes at once (ten classes, each timed alone
// in a loop on the host of the 2026-12-01c reference run: 22-30 ns scalar, 14 ns in vectors).
//
// exp_nonpositive: exp(x) for x <= 0 (what softmax needs once the largest logit is subtracted), to
// within 1 ulp (tests/test_vector_confidence.cpp measures it against double). x = n ln2 + r with
// n the nearest integer to x / ln2 and |r| <= ln2 / 2; ln2 is split in two (Cody and Waite) so that
// n ln2 is exact; exp(r) = 1 + r + r^2 P(r) with the minimax coefficients of Cephes' expf; 2^n is
// built in the exponent bits. Below ln(FLT_MIN) the result is 0 (a normal float's exponent cannot
// go lower, and a term under 1e-38 cannot change a sum that is at least 1). NaN stays NaN.
//
// Semantics kept from math::max_softmax: the largest logit contributes exactly exp(0) = 1, so the
// confidence is at most 1 and exactly 1/n when all logits are equal (the exit tests' boundary
// cases rely on it); a NaN logit makes the confidence NaN, which never fires.
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "condbench/simd.h"

namespace condbench::cpu {

template <int Lanes>
inline void exp_nonpositive(simd::Vec<Lanes>& x) {
  using V = simd::Vec<Lanes>;
  using I = simd::IntVec<Lanes>;
  constexpr float kLowest = -87.33654f;       // ln(FLT_MIN)
  constexpr float kRound = 12582912.0f;       // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kLn2Hi = 0.693359375f;      // ln 2 in 9 bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;   // ln 2 - kLn2Hi
  constexpr int32_t kRoundBits = 0x4B400000;  // the bits of kRound
  const I underflow = x < kLowest;
  x = x < kLowest ? V{} + kLowest : x;
  const V shifted = x * 1.44269504088896341f + kRound;  // n in the low mantissa bits
  const V n = shifted - kRound;
  const V r = (x - n * kLn2Hi) - n * kLn2Lo;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  I bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits - kRoundBits + 127) << 23;  // 2^n, for -126 <= n <= 0
  V scale;
  std::memcpy(&scale, &bits, sizeof scale);
  x = underflow ? V{} : p * scale;
}

// The two halves of a vector, as lane shuffles the compiler makes register extracts (a copy
// through memory would store the whole vector and load its halves back, and the upper half's load
// cannot take its value from the store).
template <int Lanes, size_t... Low>
inline void split_halves(const simd::Vec<Lanes>& v, simd::Vec<Lanes / 2>& low, simd::Vec<Lanes / 2>& high,
                         std::index_sequence<Low...> /*lanes*/) {
  low = __builtin_shufflevector(v, v, Low...);
  high = __builtin_shufflevector(v, v, (Low + Lanes / 2)...);
}

// The lanes of v folded into one by `combine(a, b)`, which sets a to a op b for vectors of any
// width (the largest lane, their sum), halving the vector at each step: a tree of depth
// log2(Lanes) instead of a chain of Lanes - 1 scalar operations. Vectors by reference, as in
// simd.h.
template <int Lanes, typename Combine>
inline float fold_lanes(const simd::Vec<Lanes>& v, Combine combine) {
  if constexpr (Lanes == 1) {
    return v[0];
  } else {
    simd::Vec<Lanes / 2> low, high;
    split_halves<Lanes>(v, low, high, std::make_index_sequence<Lanes / 2>{});
    combine(low, high);
    return fold_lanes<Lanes / 2>(low, combine);
  }
}

// Vector j of the logits, whole: lanes at or past n hold -inf (whose exponential is 0, so they
// change neither the max nor the sum), whatever the memory there holds.
template <int Lanes>
inline void logit_vector(simd::Vec<Lanes>& l, const float* logits, int n, int j) {
  using V = simd::Vec<Lanes>;
  using I = simd::IntVec<Lanes>;
  I lane;
  for (int k = 0; k < Lanes; ++k) lane[k] = k;  // constant-folded
  simd::load<Lanes>(l, logits + j * Lanes);
  l = lane + j * Lanes < n ? l : V{} - std::numeric_limits<float>::infinity();
}

// max(softmax(logits[0..n))) for n >= 1, Lanes logits at a time. Reads whole vectors: the floats
// up to the next multiple of Lanes past logits[n - 1] must be readable (fused pads its logits
// buffer for it); their values are ignored.
template <int Lanes>
inline float max_softmax(const float* logits, int n) {
  using V = simd::Vec<Lanes>;
  const int vectors = (n + Lanes - 1) / Lanes;
  V m;
  logit_vector<Lanes>(m, logits, n, 0);
  for (int j = 1; j < vectors; ++j) {
    V l;
    logit_vector<Lanes>(l, logits, n, j);
    m = l > m ? l : m;
  }
  const float largest = fold_lanes<Lanes>(m, [](auto& a, const auto& b) { a = b > a ? b : a; });
  V sum = V{};
  for (int j = 0; j < vectors; ++j) {
    V e;
    logit_vector<Lanes>(e, logits, n, j);
    e -= largest;
    exp_nonpositive<Lanes>(e);
    sum += e;
  }
  return 1.0f / fold_lanes<Lanes>(sum, [](auto& a, const auto& b) { a += b; });
}

}  // namespace condbench::cpu
