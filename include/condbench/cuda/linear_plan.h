#pragma once
// The host arithmetic behind the native CUDA kernels (src/cuda/early_exit_kernels.cu,
// strategies/native/cuda/fused.cu): how a Linear is laid out on the device, which kernel computes
// it at a batch, how its work is split into thread blocks, how large the persistent kernel's grid
// is and which of the two fused kernels runs. Plain C++, no CUDA header: every build's host tests
// check it (tests/test_linear_plan.cpp), a CPU-only one included, and the kernels are launched
// with exactly what they checked.
#include <cstddef>
#include <optional>
#include <vector>

#include "condbench/exit_math.h"  // CONDBENCH_HD: the partitions below run in kernels too
#include "condbench/native_model.h"

namespace condbench::cuda {

// Every Linear kernel runs eight warps per thread block.
inline constexpr int kWarpSize = 32;
inline constexpr int kLinearThreads = 256;
inline constexpr int kLinearWarps = kLinearThreads / kWarpSize;
// Floats per vector load: rows of weights and activations are padded to a multiple of it (zeros),
// so a warp reads them as float4 with no scalar tail.
inline constexpr int kVectorWidth = 4;
// GEMV: a warp computes one output for up to this many rows at once, each weight loaded once for
// all of them. Batches up to it run the GEMV kernel, larger ones the GEMM.
inline constexpr int kGemvMaxRows = 8;
// GEMM: a thread block computes a tile of kGemmRows rows x kGemmOutputs outputs, the sum over the
// inputs staged through shared memory kGemmDepth at a time; each weight is read once per
// kGemmRows rows.
inline constexpr int kGemmRows = 64;
inline constexpr int kGemmOutputs = 64;
inline constexpr int kGemmDepth = 32;
// The most ways one sum is split: GEMV, between the warps of one block (all of them); GEMM, between
// thread blocks, whose partial tiles the last to finish adds up.
inline constexpr int kMaxGemvSplit = kLinearWarps;
inline constexpr int kMaxGemmSplit = 8;

// n rounded up to a whole number of vector loads.
int vector_padded(int n);

// A Linear in torch's own layout, [out][in_pitch] row-major with in_pitch = vector_padded(in) and
// zeros past `in`, made from the native layout (wt [in][pitch], exit_math.h): a warp reads one
// output's weights as consecutive float4.
std::vector<float> rows_layout(const NativeLinear& linear);

enum class LinearKernel : int { gemv = 0, gemm = 1 };

// How a layer's launch is shaped. Every layer a plan serves (the blocks, or the heads) has the
// same outputs; `in` is the widest of their inputs, so a narrower one (block 0) runs the same
// grid with some parts of its sum empty.
struct LinearPlan {
  LinearKernel kernel;
  int group_rows;  // rows computed together and skipped together once all have left: the FLOPs count them
  int split;       // ways the sum over the inputs is split (GEMV: warps of a block; GEMM: thread blocks)
  int items;       // thread blocks of a stage kernel; work items the persistent kernel's blocks share
};

// GEMV's rows per warp at a batch: the smallest power of two holding it (a warp's rows are a
// template constant, so registers hold one sum per row).
int gemv_rows(int batch);
// Splits the sum of a GEMV layer into 1, 2, 4 or 8 warps per output, doubling while the blocks it
// makes (kLinearWarps / split outputs each) are fewer than `fill` and every lane still loads a
// float4 of its part: the heads' 10 outputs then spread over 10 blocks of 8 warps, not 2 blocks.
int gemv_split(int in, int out, int fill);
// Splits a GEMM layer's sum between 1..kMaxGemmSplit thread blocks per tile, doubling while the
// tiles times the split are fewer than `fill` and each part keeps two kGemmDepth steps: at batch
// 64 a 1024-wide layer has 16 tiles, which alone would leave most of 132 multiprocessors idle.
int gemm_split(int in, int tiles, int fill);
// The plan of a layer of `out` outputs and inputs up to `in` at `batch` rows, its work spread
// over at least `fill` thread blocks where it can be (the multiprocessors).
LinearPlan plan_linear(int batch, int in, int out, int fill);
// A part of a sum split `split` ways, [begin, end), empty when the parts outnumber what there is.
struct Range {
  int begin, end;
};
// GEMV: part `part` of a row's `vectors` float4 columns, as equal as they come.
CONDBENCH_HD inline Range gemv_part(int vectors, int split, int part) {
  const int per_part = (vectors + split - 1) / split;
  const int begin = part * per_part < vectors ? part * per_part : vectors;
  return {begin, begin + per_part < vectors ? begin + per_part : vectors};
}
// GEMM: part `part` of `depth` inputs, in whole kGemmDepth steps (the last part takes the rest).
CONDBENCH_HD inline Range gemm_part(int depth, int split, int part) {
  const int per_part = ((depth + split - 1) / split + kGemmDepth - 1) / kGemmDepth * kGemmDepth;
  const int begin = part * per_part < depth ? part * per_part : depth;
  return {begin, begin + per_part < depth ? begin + per_part : depth};
}

// Floats of the GEMM split-K workspace (one partial tile per work item) and its arrival counters
// (one per tile) a plan needs; 0 for a plan that does not split a GEMM.
size_t split_workspace_floats(const LinearPlan& plan);
int split_counters(const LinearPlan& plan);

// The persistent kernel's grid: one block per multiprocessor where the occupancy API says at least
// one fits (a grid-wide barrier waits for every block, so more blocks cost each barrier more, and
// one 256-thread block per SM already keeps about 32 KB of loads in flight there), no more than
// the most work items any layer has, at least one. 0 when no block fits on a multiprocessor
// (blocks_per_sm == 0): a cooperative launch would be refused.
int persistent_grid(int multiprocessors, int blocks_per_sm, int most_items);

// The two kernels behind fused on CUDA.
enum class FusedKernel : int {
  single_block = 0,  // a thread block per group of rows, their activations in shared memory, no grid barrier
  persistent = 1,    // every multiprocessor on every layer, a grid-wide barrier between dependent layers
};
// Up to this hidden width fused runs the single-block kernel: a Linear is then at most
// 128 x 128 floats (64 KB), which one multiprocessor reads in about the time of the grid-wide
// barrier the persistent kernel pays per layer instead (an estimate from the design, checked by
// the first GPU run: docs/measured.md).
inline constexpr int kSingleBlockMaxHidden = 128;
// Which kernel fused runs: the single-block one up to kSingleBlockMaxHidden where its rows fit in
// shared memory, the persistent one where a cooperative launch fits, else the other that fits;
// nullopt when neither does.
std::optional<FusedKernel> choose_fused_kernel(int hidden, bool single_block_fits, bool persistent_fits);
const char* fused_kernel_name(FusedKernel kernel);

}  // namespace condbench::cuda
