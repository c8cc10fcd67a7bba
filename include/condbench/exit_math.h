#pragma once
// The arithmetic of one early-exit forward, written once for the CPU loops and the CUDA kernels
// (host tests check the same code the kernels run).
//
// Native layout: a Linear's weight is stored transposed, wt[i * pitch + o] = weight[o][i], with
// the row pitch rounded up to a multiple of 8 outputs and the padding zero (NativeLinear). Both a
// CPU loop over o (unit stride, vectorisable without -ffast-math) and a CUDA thread per output o
// (coalesced across a warp) then read memory in order, and the CPU never needs a scalar tail.
#include <cmath>

#if defined(__CUDACC__)
#define CONDBENCH_HD __host__ __device__
#else
#define CONDBENCH_HD
#endif
// Unrolls a loop with a constant trip count in device code, so per-row arrays stay in registers.
#if defined(__CUDA_ARCH__)
#define CONDBENCH_UNROLL _Pragma("unroll")
#else
#define CONDBENCH_UNROLL
#endif

namespace condbench::math {

// Part of one output of a Linear for Rows rows at once (x holds Rows row pointers): acc[r] = sum over i in [begin, end)
// of x[r][i] * weight[o][i], ascending. Each weight is loaded once and used for every row, so a GPU thread block that
// holds several rows reads the weights once for all of them. GPU kernels split the sum over i across threads and add
// the parts to the bias. A caller with fewer rows points the spare entries of x at a real row and ignores their sums.
template <int Rows>
CONDBENCH_HD inline void linear_partial_rows(const float* wt, const float* const* x, int begin, int end, int pitch,
                                             int o, float (&acc)[Rows]) {
  CONDBENCH_UNROLL
  for (int r = 0; r < Rows; ++r) acc[r] = 0.0f;
  for (int i = begin; i < end; ++i) {
    const float w = wt[i * pitch + o];
    CONDBENCH_UNROLL
    for (int r = 0; r < Rows; ++r) acc[r] += x[r][i] * w;
  }
}

// max(softmax) of the n logits logit(0) .. logit(n - 1) without forming the softmax:
// exp(l_max - l_max) / sum_j exp(l_j - l_max). Read through a callable so that a kernel can say how
// (the persistent fused kernel reads logits other blocks of the same launch wrote, through L2).
template <typename Logit>
CONDBENCH_HD inline float max_softmax_of(const Logit& logit, int n) {
  float m = logit(0);
  for (int j = 1; j < n; ++j) {
    const float l = logit(j);
    m = l > m ? l : m;
  }
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += expf(logit(j) - m);
  return 1.0f / sum;
}

CONDBENCH_HD inline float max_softmax(const float* logits, int n) {
  return max_softmax_of([logits](int j) { return logits[j]; }, n);
}

// docs/design.md §1: an exit fires when its confidence is strictly greater than its threshold, so a
// confidence equal to the threshold does not fire (t = 1.0 never fires, t = 0.0 always does).
CONDBENCH_HD inline bool exit_fires(float confidence, float threshold) { return confidence > threshold; }

// A score the rule can take: in (0, 1], as the largest softmax probability is, so that a threshold
// of 1 means "no row leaves here" and 0 "every row does" (the scenarios' forced exits). NaN is not.
CONDBENCH_HD inline bool score_in_range(float confidence) { return confidence > 0.0f && confidence <= 1.0f; }

}  // namespace condbench::math
