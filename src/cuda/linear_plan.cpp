// Host arithmetic only (linear_plan.h): built into condbench_core, so it needs no CUDA toolkit.
#include "condbench/cuda/linear_plan.h"

#include <algorithm>

namespace condbench::cuda {

namespace {
int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace

int vector_padded(int n) { return ceil_div(n, kVectorWidth) * kVectorWidth; }

std::vector<float> rows_layout(const NativeLinear& linear) {
  const int in_pitch = vector_padded(linear.in);
  std::vector<float> rows(static_cast<size_t>(linear.out) * in_pitch, 0.0f);
  for (int o = 0; o < linear.out; ++o)
    for (int i = 0; i < linear.in; ++i)
      rows[static_cast<size_t>(o) * in_pitch + i] = linear.wt[static_cast<size_t>(i) * linear.pitch + o];
  return rows;
}

int gemv_rows(int batch) {
  int rows = 1;
  while (rows < batch && rows < kGemvMaxRows) rows *= 2;
  return rows;
}

int gemv_split(int in, int out, int fill) {
  const int vectors = vector_padded(in) / kVectorWidth;
  int split = 1;
  while (split < kMaxGemvSplit && ceil_div(out * split, kLinearWarps) < fill && vectors / (2 * split) >= kWarpSize)
    split *= 2;
  return split;
}

int gemm_split(int in, int tiles, int fill) {
  int split = 1;
  while (split < kMaxGemmSplit && tiles * split < fill && in >= 2 * split * 2 * kGemmDepth) split *= 2;
  return split;
}

LinearPlan plan_linear(int batch, int in, int out, int fill) {
  if (batch <= kGemvMaxRows) {
    const int split = gemv_split(in, out, fill);
    return {LinearKernel::gemv, gemv_rows(batch), split, ceil_div(out * split, kLinearWarps)};
  }
  const int tiles = ceil_div(batch, kGemmRows) * ceil_div(out, kGemmOutputs);
  const int split = gemm_split(in, tiles, fill);
  return {LinearKernel::gemm, kGemmRows, split, tiles * split};
}

size_t split_workspace_floats(const LinearPlan& plan) {
  if (plan.kernel != LinearKernel::gemm || plan.split == 1) return 0;
  return static_cast<size_t>(plan.items) * kGemmRows * kGemmOutputs;
}

int split_counters(const LinearPlan& plan) {
  return plan.kernel == LinearKernel::gemm && plan.split > 1 ? plan.items / plan.split : 0;
}

int persistent_grid(int multiprocessors, int blocks_per_sm, int most_items) {
  if (blocks_per_sm < 1 || multiprocessors < 1) return 0;
  return std::max(1, std::min(multiprocessors, most_items));
}

std::optional<FusedKernel> choose_fused_kernel(int hidden, bool single_block_fits, bool persistent_fits) {
  const bool small = hidden <= kSingleBlockMaxHidden;
  if (small && single_block_fits) return FusedKernel::single_block;
  if (persistent_fits) return FusedKernel::persistent;
  if (single_block_fits) return FusedKernel::single_block;
  return std::nullopt;
}

const char* fused_kernel_name(FusedKernel kernel) {
  return kernel == FusedKernel::single_block ? "single-block" : "persistent";
}

}  // namespace condbench::cuda
