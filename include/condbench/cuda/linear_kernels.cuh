#pragma once
// The Linear layers' device code, for .cu files only: one GEMV item and one GEMM item of a
// linear_plan.h plan. The stage kernels (src/cuda/early_exit_kernels.cu) run one item per thread
// block; the persistent fused kernel (strategies/native/cuda/fused.cu) has each block loop over
// the items of a layer. So both compute every Linear with the same code, and the FLOPs and row
// groups the host tests derive from a plan are what ran.
//
// Weights are in torch's [out][in_pitch] layout (DeviceLinear::w): a warp reads one output's row
// as float4 through the read-only path, several loads in flight per lane. Activations come
// through `Load`: the read-only path where an earlier kernel wrote them (the stage kernels), L2
// where another block of the same kernel did (the persistent kernel: a multiprocessor's L1 and
// read-only cache are not kept coherent with the others' writes).
#include <cuda_runtime.h>

#include "condbench/cuda/device_model.h"
#include "condbench/cuda/linear_plan.h"

namespace condbench::cuda::device {

// Loads of activations: ReadOnly where they were written before this kernel began, Coherent where
// a block of this kernel may have written them.
struct ReadOnly {
  static __device__ float one(const float* p) { return __ldg(p); }
  static __device__ float4 four(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
};
struct Coherent {
  static __device__ float one(const float* p) { return __ldcg(p); }
  static __device__ float4 four(const float* p) { return __ldcg(reinterpret_cast<const float4*>(p)); }
};

// One Linear at one stage: y[row][o] = act(bias[o] + x[row] . w[o]) for the rows still running.
struct LinearOperands {
  DeviceLinear layer;
  const float* x;  // [rows][x_stride]
  int x_stride;
  // x's rows read as float4: x_stride a multiple of 4, 16-byte aligned, zero from layer.in to
  // layer.in_pitch. Else element by element (the persistent kernel reading a caller's input whose
  // rows are not float4-aligned). A template argument below (gemv_item, gemm_item dispatch on
  // it once), so that the inner loops have no branch to keep loads from being issued early.
  bool x_vector;
  float* y;  // [rows][y_stride]
  int y_stride;
  bool relu;
};

__device__ inline float4 zero4() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

// x[k .. k+4) of one row: one float4, or (Vector false) four floats, zeros past `in`.
template <typename Load, bool Vector>
__device__ inline float4 load_x4(const float* row, int k, int in) {
  if constexpr (Vector) {
    return Load::four(row + k);
  } else {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = k + i < in ? Load::one(row + k + i) : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
  }
}

__device__ inline float dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

__device__ inline float activate(float v, bool relu) { return relu && v < 0.0f ? 0.0f : v; }

// --- GEMV: a warp per output ---------------------------------------------------------------------

// One warp's part of output o for Rows rows: the float4 columns [v_begin, v_end) of the weight
// row, each lane taking every 32nd. A step issues all its loads (kUnroll of the weights and as
// many of each row's inputs, predicated, not branched on) before its first multiply, so that a
// lane has kUnroll x (1 + Rows) loads in flight rather than one pair at a time: at 8 steps a lane
// of a 1024-wide row has 256 bytes of weights and inputs in flight, a warp 8 KB. Every lane ends
// with the sum of the whole part (butterfly reduction).
template <int Rows>
inline constexpr int kGemvUnroll = Rows == 1   ? 8
                                   : Rows == 2 ? 4
                                               : 2;  // within about 100 registers of loads

template <int Rows, typename Load, bool Vector>
__device__ inline void gemv_warp_sums(const LinearOperands& op, int o, const float* const (&x)[Rows], int v_begin,
                                      int v_end, float (&acc)[Rows]) {
  constexpr int kUnroll = kGemvUnroll<Rows>;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const float4* w = reinterpret_cast<const float4*>(op.layer.w + static_cast<size_t>(o) * op.layer.in_pitch);
#pragma unroll
  for (int r = 0; r < Rows; ++r) acc[r] = 0.0f;
  float part[kUnroll][Rows] = {};
  for (int v0 = v_begin + lane; v0 < v_end; v0 += kWarpSize * kUnroll) {
    float4 wv[kUnroll], xv[kUnroll][Rows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      // Past the end a lane loads the part's last column again and drops it: every load is
      // unconditional, only the select after it is not.
      const int v = v0 + u * kWarpSize;
      const int at = min(v, v_end - 1);
      const bool inside = v < v_end;
      const float4 loaded = __ldg(w + at);
      wv[u] = inside ? loaded : zero4();
#pragma unroll
      for (int r = 0; r < Rows; ++r) xv[u][r] = load_x4<Load, Vector>(x[r], at * kVectorWidth, op.layer.in);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < Rows; ++r) part[u][r] = dot4(wv[u], xv[u][r], part[u][r]);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
#pragma unroll
    for (int r = 0; r < Rows; ++r) acc[r] += part[u][r];
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
}

struct GemvShared {
  float partial[kLinearWarps][kGemvMaxRows];
};

// Item `item` of a GEMV plan over rows 0..batch-1 (batch <= Rows, the rest pointing at row 0 and
// not stored): kLinearWarps / split outputs, `split` warps summing parts of each, their parts
// added in a fixed order through shared memory (the same result on every run). live(r): row r
// still runs, so its output is stored. Every thread of the block calls it.
template <int Rows, typename Load, typename Live>
__device__ void gemv_item(const LinearOperands& op, const LinearPlan& plan, int item, int batch, const Live& live,
                          GemvShared& shared) {
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize, lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int split = plan.split;
  const int o = item * (kLinearWarps / split) + warp / split;
  const int part = warp % split;
  const Range columns = gemv_part(op.layer.in_pitch / kVectorWidth, split, part);
  const float* x[Rows];
#pragma unroll
  for (int r = 0; r < Rows; ++r) x[r] = op.x + static_cast<size_t>(r < batch ? r : 0) * op.x_stride;
  float acc[Rows];
  if (o < op.layer.out && op.x_vector) {
    gemv_warp_sums<Rows, Load, true>(op, o, x, columns.begin, columns.end, acc);
  } else if (o < op.layer.out) {
    gemv_warp_sums<Rows, Load, false>(op, o, x, columns.begin, columns.end, acc);
  } else {
#pragma unroll
    for (int r = 0; r < Rows; ++r) acc[r] = 0.0f;
  }
  if (split > 1) {  // the same for the whole launch: every thread takes this branch or none does
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < Rows; ++r) shared.partial[warp][r] = acc[r];
    }
    __syncthreads();
    if (part == 0) {
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        float sum = 0.0f;
        for (int p = 0; p < split; ++p) sum += shared.partial[warp + p][r];
        acc[r] = sum;
      }
    }
    __syncthreads();  // the scratch is free for the block's next item
  }
  if (part != 0 || o >= op.layer.out || lane >= Rows || lane >= batch || !live(lane)) return;
  float sum = acc[0];  // lane r stores row r (a select: an index into acc would put it in memory)
#pragma unroll
  for (int r = 1; r < Rows; ++r) sum = lane == r ? acc[r] : sum;
  op.y[static_cast<size_t>(lane) * op.y_stride + o] = activate(__ldg(op.layer.bias + o) + sum, op.relu);
}

// --- GEMM: a register-tiled 64 x 64 tile per thread block -----------------------------------------

struct GemmShared {
  // Transposed ([k][row], [k][output]) so that a thread reads its 4 rows and its 4 outputs as one
  // float4 each; the rows padded by 4 floats keep float4 alignment.
  float xs[kGemmDepth][kGemmRows + 4];
  float ws[kGemmDepth][kGemmOutputs + 4];
  int last;
};
static_assert(kLinearThreads == (kGemmRows / 4) * (kGemmOutputs / 4), "a thread holds a 4 x 4 block of the tile");
static_assert(kGemmRows == kGemmOutputs && kGemmRows * kGemmDepth == 2 * kLinearThreads * 4,
              "two float4 loads per thread fill each of xs and ws");

// The sum over inputs [k_begin, k_end) of a thread's 4 x 4 block of the tile at (row0, o0).
template <typename Load, bool Vector>
__device__ inline void gemm_sums(const LinearOperands& op, int row0, int o0, int k_begin, int k_end, int batch,
                                 GemmShared& shared, float (&acc)[4][4]) {
  const int t = static_cast<int>(threadIdx.x);
  const int depth = op.layer.in_pitch;
  const int my_rows = (t / (kGemmOutputs / 4)) * 4, my_outputs = (t % (kGemmOutputs / 4)) * 4;
  for (int k0 = k_begin; k0 < k_end; k0 += kGemmDepth) {
    // Consecutive threads take consecutive rows (and outputs), so the transposing stores fall in
    // consecutive banks; each loads a float4 of a row's inputs.
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = t + j * kLinearThreads;
      const int r = e % kGemmRows, k = (e / kGemmRows) * kVectorWidth;
      const int row = row0 + r, o = o0 + r, kk = k0 + k;
      const float4 xv = row < batch && kk < k_end
                            ? load_x4<Load, Vector>(op.x + static_cast<size_t>(row) * op.x_stride, kk, op.layer.in)
                            : zero4();
      const float4 wv = o < op.layer.out && kk < k_end
                            ? __ldg(reinterpret_cast<const float4*>(op.layer.w + static_cast<size_t>(o) * depth + kk))
                            : zero4();
      shared.xs[k][r] = xv.x;
      shared.xs[k + 1][r] = xv.y;
      shared.xs[k + 2][r] = xv.z;
      shared.xs[k + 3][r] = xv.w;
      shared.ws[k][r] = wv.x;
      shared.ws[k + 1][r] = wv.y;
      shared.ws[k + 2][r] = wv.z;
      shared.ws[k + 3][r] = wv.w;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kGemmDepth; ++k) {
      const float4 xv = *reinterpret_cast<const float4*>(&shared.xs[k][my_rows]);
      const float4 wv = *reinterpret_cast<const float4*>(&shared.ws[k][my_outputs]);
      const float xr[4] = {xv.x, xv.y, xv.z, xv.w}, wc[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(xr[r], wc[c], acc[r][c]);
    }
    __syncthreads();
  }
}

// Item `item` of a GEMM plan: part `item % split` of the sum of tile `item / split` (64 rows x 64
// outputs), each weight of the tile read once for its 64 rows. A tile none of whose rows still runs
// is skipped by every part alike. With split > 1 each part stores its partial tile, and the last
// part to arrive (an atomic count per tile) adds all of them in a fixed order, applies the bias and
// the activation, stores, and resets the count for the next launch: split-K in one launch, the
// same result whichever part is last. Every thread of the block calls it.
template <typename Load, typename Live>
__device__ void gemm_item(const LinearOperands& op, const LinearPlan& plan, int item, int batch, const Live& live,
                          GemmShared& shared, float* partials, int* arrivals) {
  const int t = static_cast<int>(threadIdx.x);
  const int split = plan.split;
  const int tile = item / split, part = item % split;
  const int out_tiles = (op.layer.out + kGemmOutputs - 1) / kGemmOutputs;
  const int row0 = (tile / out_tiles) * kGemmRows, o0 = (tile % out_tiles) * kGemmOutputs;
  if (!__syncthreads_or(t < kGemmRows && row0 + t < batch && live(row0 + t))) return;

  const Range inputs = gemm_part(op.layer.in_pitch, split, part);
  const int my_rows = (t / (kGemmOutputs / 4)) * 4, my_outputs = (t % (kGemmOutputs / 4)) * 4;
  float acc[4][4] = {};
  if (op.x_vector)
    gemm_sums<Load, true>(op, row0, o0, inputs.begin, inputs.end, batch, shared, acc);
  else
    gemm_sums<Load, false>(op, row0, o0, inputs.begin, inputs.end, batch, shared, acc);

  if (split > 1) {
    constexpr int kTile = kGemmRows * kGemmOutputs;
    float* mine = partials + static_cast<size_t>(item) * kTile;
#pragma unroll
    for (int r = 0; r < 4; ++r)
      *reinterpret_cast<float4*>(mine + (my_rows + r) * kGemmOutputs + my_outputs) =
          make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    __threadfence();  // this part's tile is visible device-wide before its arrival is counted
    __syncthreads();
    if (t == 0) shared.last = atomicAdd(arrivals + tile, 1) == split - 1;
    __syncthreads();
    if (!shared.last) return;
    __threadfence();  // every part's tile is read after its arrival was seen
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
      for (int p = 0; p < split; ++p) {
        const float4 v = __ldcg(reinterpret_cast<const float4*>(
            partials + static_cast<size_t>(tile * split + p) * kTile + (my_rows + r) * kGemmOutputs + my_outputs));
        acc[r][0] += v.x;
        acc[r][1] += v.y;
        acc[r][2] += v.z;
        acc[r][3] += v.w;
      }
    }
    if (t == 0) arrivals[tile] = 0;
  }

#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = row0 + my_rows + r;
    if (row >= batch || !live(row)) continue;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int o = o0 + my_outputs + c;
      if (o < op.layer.out)
        op.y[static_cast<size_t>(row) * op.y_stride + o] = activate(__ldg(op.layer.bias + o) + acc[r][c], op.relu);
    }
  }
}

// --- counting ------------------------------------------------------------------------------------

// Sums `value` over the thread block; every thread gets the total. The leading barrier keeps a
// second call from resetting `total` while threads still read the first result.
__device__ inline int block_sum(int value, int* total) {
  __syncthreads();
  if (threadIdx.x == 0) *total = 0;
  __syncthreads();
  atomicAdd(total, value);
  __syncthreads();
  return *total;
}

// Rows a Linear computed under a plan whose groups are `group` rows: every row of each group that
// holds a row still running (asked before an exit test changes which do). Every thread of the
// block calls it and gets the count.
template <typename Live>
__device__ inline int computed_rows(const Live& live, int batch, int group, int* total) {
  int rows = 0;
  for (int g0 = static_cast<int>(threadIdx.x) * group; g0 < batch; g0 += static_cast<int>(blockDim.x) * group) {
    const int end = min(batch, g0 + group);
    bool any = false;
    for (int r = g0; r < end && !any; ++r) any = live(r);
    if (any) rows += end - g0;
  }
  return block_sum(rows, total);
}

}  // namespace condbench::cuda::device
