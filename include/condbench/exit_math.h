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

// One output of a Linear: bias[o] + sum_i x[i] * weight[o][i], summed in ascending i.
CONDBENCH_HD inline float linear_output(const float* wt, const float* bias, const float* x, int in, int pitch, int o) {
  float acc = bias[o];
  for (int i = 0; i < in; ++i) acc += x[i] * wt[i * pitch + o];
  return acc;
}

namespace detail {
// Outputs [o0, o0 + Width) of a Linear in a fixed-size local array that the compiler keeps in
// vector registers for the whole sum over i: each weight is loaded once and nothing goes back to
// memory until the end. Each accumulator is a chain of dependent multiply-adds, so a narrow tile
// splits the sum over i into Split interleaved partial sums to keep enough chains in flight.
template <int Width, int Split>
CONDBENCH_HD inline void linear_tile(const float* __restrict__ wt, const float* __restrict__ bias,
                                     const float* __restrict__ x, int in, int pitch, int o0, int valid,
                                     float* __restrict__ y, bool relu) {
  float acc[Split][Width];
  for (int s = 0; s < Split; ++s)
    for (int j = 0; j < Width; ++j) acc[s][j] = s == 0 ? bias[o0 + j] : 0.0f;
  int i = 0;
  for (; i + Split <= in; i += Split)
    for (int s = 0; s < Split; ++s) {
      const float xi = x[i + s];
      const float* __restrict__ w = wt + (i + s) * pitch + o0;
      for (int j = 0; j < Width; ++j) acc[s][j] += xi * w[j];
    }
  for (; i < in; ++i) {
    const float xi = x[i];
    const float* __restrict__ w = wt + i * pitch + o0;
    for (int j = 0; j < Width; ++j) acc[0][j] += xi * w[j];
  }
  for (int s = 1; s < Split; ++s)
    for (int j = 0; j < Width; ++j) acc[0][j] += acc[s][j];
  for (int j = 0; j < Width && j < valid; ++j) y[o0 + j] = relu && acc[0][j] < 0.0f ? 0.0f : acc[0][j];
}
}  // namespace detail

// A whole Linear for one row, optionally followed by ReLU: y[0..out) = act(bias + x W^T), for a
// pitch that is a multiple of 8 (padding outputs are computed but not stored). Wide layers go in
// tiles of 32 outputs (eight 4-wide chains), narrow ones such as exit heads in tiles of 8 with the
// sum over i split four ways.
CONDBENCH_HD inline void linear_row(const float* __restrict__ wt, const float* __restrict__ bias,
                                    const float* __restrict__ x, int in, int out, int pitch, float* __restrict__ y,
                                    bool relu) {
  int o = 0;
  for (; o + 32 <= out; o += 32) detail::linear_tile<32, 1>(wt, bias, x, in, pitch, o, 32, y, relu);
  for (; o < out; o += 8) detail::linear_tile<8, 4>(wt, bias, x, in, pitch, o, out - o, y, relu);
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
