#pragma once
// The arithmetic of one early-exit forward, written once for the CPU loops and the CUDA kernels
// (issue 3: host tests check the same code the kernels run).
//
// Native layout: a Linear's weight is stored transposed, wt[i * out + o] = weight[o][i], so that
// both a CPU loop over o (unit stride, vectorisable without -ffast-math) and a CUDA thread per
// output o (coalesced across a warp) read memory in order. Both forms sum each output over i in
// ascending order; they may still differ in the last bits where a compiler fuses multiply-adds.
#include <cmath>

#if defined(__CUDACC__)
#define CONDBENCH_HD __host__ __device__
#else
#define CONDBENCH_HD
#endif

namespace condbench::math {

// One output of a Linear: bias[o] + sum_i x[i] * weight[o][i].
CONDBENCH_HD inline float linear_output(const float* wt, const float* bias, const float* x,
                                        int in, int out, int o) {
  float acc = bias[o];
  for (int i = 0; i < in; ++i) acc += x[i] * wt[i * out + o];
  return acc;
}

// A whole Linear for one row, optionally followed by ReLU: y = act(bias + x W^T). The loop over o
// is innermost so the compiler vectorises it; the sum over i keeps the order of linear_output.
CONDBENCH_HD inline void linear_row(const float* __restrict__ wt, const float* __restrict__ bias,
                                    const float* __restrict__ x, int in, int out,
                                    float* __restrict__ y, bool relu) {
  for (int o = 0; o < out; ++o) y[o] = bias[o];
  for (int i = 0; i < in; ++i) {
    const float xi = x[i];
    const float* __restrict__ w = wt + i * out;
    for (int o = 0; o < out; ++o) y[o] += xi * w[o];
  }
  if (relu)
    for (int o = 0; o < out; ++o) y[o] = y[o] > 0.0f ? y[o] : 0.0f;
}

// max(softmax(logits)) without forming the softmax: exp(l_max - l_max) / sum_j exp(l_j - l_max).
CONDBENCH_HD inline float max_softmax(const float* logits, int n) {
  float m = logits[0];
  for (int j = 1; j < n; ++j) m = logits[j] > m ? logits[j] : m;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += expf(logits[j] - m);
  return 1.0f / sum;
}

// DESIGN §1: an exit fires when its confidence is strictly greater than its threshold, so a
// confidence equal to the threshold does not fire (t = 1.0 never fires, t = 0.0 always does).
CONDBENCH_HD inline bool exit_fires(float confidence, float threshold) {
  return confidence > threshold;
}

}  // namespace condbench::math
