#include "condbench/cuda/check.h"
#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/cuda/stuck_condition.h"
#include "condbench/exit_math.h"

namespace condbench::cuda {

namespace {

// Two Linear kernels, chosen when launched by the shape (fixed for a prepared strategy, so a
// captured graph holds one of them):
//
// - sliced, unless the tiled kernel fills the GPU: 32 consecutive outputs (coalesced weight reads
//   in the native layout) x 8 slices of the input dimension, for kSlicedRows rows, so each weight
//   loaded serves kSlicedRows rows and a small batch still spreads over many threads;
// - tiled, from kTileRows rows when its tiles are at least one per multiprocessor (hidden 4096
//   from batch 129 on a 132-SM H200; fewer, larger blocks would leave SMs idle): a kTileRows x
//   kTileOutputs tile of the output per thread block, the sum over i staged through shared memory
//   kTileDepth inputs at a time, each thread holding a 4 x 4 block of the tile in registers. Each
//   weight is read from memory once per kTileRows rows (16 times less often than the sliced
//   kernel), each input once per kTileOutputs outputs.
//
// Both compute whole groups of rows (kSlicedRows or kTileRows) and skip a group whose rows have
// all left. Neither is cuBLAS: docs/measured.md says where they stop being a fair
// floor.
constexpr int kSliceOutputs = 32;
constexpr int kSlices = 8;
constexpr int kSlicedRows = 4;
constexpr int kTileRows = 64;
constexpr int kTileOutputs = 64;
constexpr int kTileDepth = 16;
constexpr int kMicro = 4;  // a thread's block of the tile: kMicro rows x kMicro outputs
constexpr int kTileThreads = (kTileRows / kMicro) * (kTileOutputs / kMicro);
constexpr int kRowThreads = 256;  // begin, exit test, finish: one block strides over the rows
static_assert(kTileThreads == 256 && kTileRows * kTileDepth % kTileThreads == 0 &&
              kTileOutputs * kTileDepth % kTileThreads == 0);

CONDBENCH_HD inline bool use_tiled(int batch, int outputs, int multiprocessors) {
  const long long tiles =
      static_cast<long long>((outputs + kTileOutputs - 1) / kTileOutputs) * ((batch + kTileRows - 1) / kTileRows);
  return batch >= kTileRows && tiles >= multiprocessors;
}

CONDBENCH_HD inline int group_rows(int batch, int outputs, int multiprocessors) {
  return use_tiled(batch, outputs, multiprocessors) ? kTileRows : kSlicedRows;
}

__device__ inline int stage_of(StageRef ref) { return ref.dynamic ? *ref.dynamic : ref.fixed; }

__global__ void begin_kernel(InferenceState st, ConditionSink loop) {
  const int n = st.batch * st.in_features;
  for (int i = threadIdx.x; i < n; i += blockDim.x) st.staged_input[i] = st.input[i];
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x) st.active[r] = 1;
  if (threadIdx.x == 0) {
    *st.active_count = st.batch;
    *st.stage = 0;
    *st.blocks_run = 0;
    *st.heads_run = 0;
    *st.flops = 0.0;
    if (loop.enabled) cudaGraphSetConditional(loop.handle, st.batch > 0 ? 1u : 0u);
  }
}

// What a block or head launch computes at a stage: y[row][o] = act(bias[o] + x[row] . weight[o]).
struct LinearOperands {
  DeviceLinear layer;
  const float* x;  // [batch][layer.in]
  float* y;        // [batch][y_stride]
  int y_stride;
  bool relu;
};

// Block s writes activation buffer s % 2. (A select, not st.hidden[k]: a variable index into a
// kernel argument copies the whole argument to local memory.)
__device__ inline float* hidden_buffer(const InferenceState& st, int s) { return s & 1 ? st.hidden[1] : st.hidden[0]; }

__device__ inline LinearOperands operands_of(const InferenceState& st, const DeviceLinear* table, StageRef ref,
                                             int is_head) {
  const int s = stage_of(ref);
  if (!is_head)
    return {table[s], s == 0 ? st.staged_input : hidden_buffer(st, s - 1), hidden_buffer(st, s), st.hidden_size, true};
  return {table[st.blocks + s], hidden_buffer(st, s == st.blocks ? s - 1 : s), st.logits, st.num_classes, false};
}

__device__ inline bool row_active(const InferenceState& st, int row) { return row < st.batch && st.active[row]; }

__global__ void __launch_bounds__(kSliceOutputs* kSlices)
    sliced_linear_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, int is_head) {
  if (*st.active_count == 0) return;  // every row has left: nothing to do
  const LinearOperands op = operands_of(st, table, ref, is_head);
  const DeviceLinear& layer = op.layer;
  const int o = blockIdx.x * kSliceOutputs + threadIdx.x;
  const int chunk = (layer.in + kSlices - 1) / kSlices;
  const int begin = min(layer.in, static_cast<int>(threadIdx.y) * chunk);
  const int end = min(layer.in, begin + chunk);
  const int row0 = blockIdx.y * kSlicedRows;

  // Rows past the batch read row0's input; their sums are dropped.
  const float* x[kSlicedRows];
  bool live[kSlicedRows];
  bool any_live = false;
  for (int r = 0; r < kSlicedRows; ++r) {
    live[r] = row_active(st, row0 + r);
    any_live = any_live || live[r];
    x[r] = op.x + (row0 + r < st.batch ? row0 + r : row0) * layer.in;
  }
  if (!any_live) return;  // every row of the group has left (the same for every thread)
  float sums[kSlicedRows];
  if (o < layer.out) {
    math::linear_partial_rows<kSlicedRows>(layer.wt, x, begin, end, layer.pitch, o, sums);
  } else {
    for (float& v : sums) v = 0.0f;
  }
  __shared__ float partial[kSlices][kSlicedRows][kSliceOutputs];
  for (int r = 0; r < kSlicedRows; ++r) partial[threadIdx.y][r][threadIdx.x] = sums[r];
  __syncthreads();
  if (threadIdx.y != 0 || o >= layer.out) return;
  for (int r = 0; r < kSlicedRows; ++r) {
    if (!live[r]) continue;
    float acc = layer.bias[o];
    for (int slice = 0; slice < kSlices; ++slice) acc += partial[slice][r][threadIdx.x];
    op.y[(row0 + r) * op.y_stride + o] = op.relu && acc < 0.0f ? 0.0f : acc;
  }
}

__global__ void __launch_bounds__(kTileThreads)
    tiled_linear_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, int is_head) {
  if (*st.active_count == 0) return;
  const int row0 = blockIdx.y * kTileRows, o0 = blockIdx.x * kTileOutputs;
  __shared__ int tile_live;
  if (threadIdx.x == 0) tile_live = 0;
  __syncthreads();
  if (threadIdx.x < kTileRows && row_active(st, row0 + threadIdx.x)) tile_live = 1;  // every writer writes 1
  __syncthreads();
  if (!tile_live) return;  // every row of the tile has left

  const LinearOperands op = operands_of(st, table, ref, is_head);
  const DeviceLinear& layer = op.layer;
  // xs is stored transposed (xs[i][row]) so a thread reads its kMicro rows side by side; the pad
  // spreads the transposing stores over the banks.
  __shared__ float xs[kTileDepth][kTileRows + kMicro];
  __shared__ float ws[kTileDepth][kTileOutputs];
  const int my_rows = (threadIdx.x / (kTileOutputs / kMicro)) * kMicro;
  const int my_outputs = (threadIdx.x % (kTileOutputs / kMicro)) * kMicro;
  float acc[kMicro][kMicro] = {};
  for (int i0 = 0; i0 < layer.in; i0 += kTileDepth) {
    // Consecutive threads load consecutive inputs of a row, and consecutive outputs of a weight
    // row: both coalesced. Past the batch, the input or the outputs: zeros.
    for (int e = threadIdx.x; e < kTileRows * kTileDepth; e += kTileThreads) {
      const int r = e / kTileDepth, i = e % kTileDepth;
      xs[i][r] = row0 + r < st.batch && i0 + i < layer.in ? op.x[(row0 + r) * layer.in + i0 + i] : 0.0f;
    }
    for (int e = threadIdx.x; e < kTileOutputs * kTileDepth; e += kTileThreads) {
      const int i = e / kTileOutputs, c = e % kTileOutputs;
      ws[i][c] = o0 + c < layer.out && i0 + i < layer.in ? layer.wt[(i0 + i) * layer.pitch + o0 + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTileDepth; ++i) {
      float xr[kMicro], wc[kMicro];
      for (int m = 0; m < kMicro; ++m) {
        xr[m] = xs[i][my_rows + m];
        wc[m] = ws[i][my_outputs + m];
      }
      for (int r = 0; r < kMicro; ++r)
        for (int c = 0; c < kMicro; ++c) acc[r][c] = fmaf(xr[r], wc[c], acc[r][c]);
    }
    __syncthreads();
  }
  for (int r = 0; r < kMicro; ++r) {
    const int row = row0 + my_rows + r;
    if (!row_active(st, row)) continue;
    for (int c = 0; c < kMicro; ++c) {
      const int o = o0 + my_outputs + c;
      if (o >= layer.out) break;
      const float v = layer.bias[o] + acc[r][c];
      op.y[row * op.y_stride + o] = op.relu && v < 0.0f ? 0.0f : v;
    }
  }
}

// Launches whichever Linear kernel suits the batch (see above).
void launch_linear(const InferenceState& state, const DeviceLinear* table, StageRef stage, int outputs, int is_head,
                   cudaStream_t stream) {
  if (!use_tiled(state.batch, outputs, state.multiprocessors)) {
    const dim3 grid((outputs + kSliceOutputs - 1) / kSliceOutputs, (state.batch + kSlicedRows - 1) / kSlicedRows);
    sliced_linear_kernel<<<grid, dim3(kSliceOutputs, kSlices), 0, stream>>>(state, table, stage, is_head);
  } else {
    const dim3 grid((outputs + kTileOutputs - 1) / kTileOutputs, (state.batch + kTileRows - 1) / kTileRows);
    tiled_linear_kernel<<<grid, kTileThreads, 0, stream>>>(state, table, stage, is_head);
  }
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

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

// Rows a Linear kernel computed at this stage: every row of each group that holds an active row
// (read before the exit test changes `active`).
__device__ inline int computed_rows(const InferenceState& st, int outputs, int* total) {
  const int group = group_rows(st.batch, outputs, st.multiprocessors);
  int rows = 0;
  for (int g0 = threadIdx.x * group; g0 < st.batch; g0 += blockDim.x * group) {
    const int end = min(st.batch, g0 + group);
    bool any = false;
    for (int r = g0; r < end && !any; ++r) any = st.active[r] != 0;
    if (any) rows += end - g0;
  }
  return block_sum(rows, total);
}

__global__ void exit_test_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, ConditionSink next) {
  const int s = stage_of(ref);
  const float threshold = st.thresholds[s];
  const DeviceLinear block = table[s], head = table[st.blocks + s];
  __shared__ int total;
  const int block_rows = computed_rows(st, block.out, &total);
  const int head_rows = computed_rows(st, head.out, &total);  // ends in a barrier: no row is read after this
  int staying = 0;
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x) {
    if (!st.active[r]) continue;
    const float confidence = math::max_softmax(st.logits + r * st.num_classes, st.num_classes);
    if (math::exit_fires(confidence, threshold)) {
      st.exit_id[r] = s + 1;
      st.active[r] = 0;
    } else {
      ++staying;
    }
  }
  const int rows_left = block_sum(staying, &total);
  if (threadIdx.x != 0) return;
  *st.flops += 2.0 * (static_cast<double>(block_rows) * block.in * block.out +
                      static_cast<double>(head_rows) * head.in * head.out);
  *st.active_count = rows_left;
  *st.blocks_run += 1;
  *st.heads_run += 1;
  if (next.is_loop) *st.stage = s + 1;
  // Set on every launch: the handle has no default value.
  if (next.enabled) {
    const bool rows_wait = rows_left > 0 || next.stuck_open_at == s + 1;
    cudaGraphSetConditional(next.handle, rows_wait && (!next.is_loop || s + 1 < st.blocks) ? 1u : 0u);
  }
}

__global__ void finish_kernel(InferenceState st, const DeviceLinear* table) {
  const DeviceLinear final_head = table[2 * st.blocks];
  __shared__ int total;
  const int rows = computed_rows(st, final_head.out, &total);
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x)
    if (st.active[r]) st.exit_id[r] = st.blocks + 1;
  if (threadIdx.x == 0) {
    *st.flops += static_cast<double>(rows) * 2.0 * final_head.in * final_head.out;
    *st.heads_run += 1;
  }
}

}  // namespace

int linear_group_rows(int batch, int outputs, int multiprocessors) {
  return group_rows(batch, outputs, multiprocessors);
}

void launch_begin(const InferenceState& state, ConditionSink loop, cudaStream_t stream) {
  begin_kernel<<<1, kRowThreads, 0, stream>>>(state, loop);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_block(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  // Every block has `hidden` outputs, so the grid is the same whatever the stage.
  launch_linear(state, table, stage, state.hidden_size, 0, stream);
}

void launch_head(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  launch_linear(state, table, stage, state.num_classes, 1, stream);
}

void launch_exit_test(const InferenceState& state, const DeviceLinear* table, StageRef stage, ConditionSink next,
                      cudaStream_t stream) {
  if (next.enabled) next.stuck_open_at = testing::stuck_condition_level() + 1;
  exit_test_kernel<<<1, kRowThreads, 0, stream>>>(state, table, stage, next);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_finish(const InferenceState& state, const DeviceLinear* table, cudaStream_t stream) {
  finish_kernel<<<1, kRowThreads, 0, stream>>>(state, table);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void make_begin_params(BeginNodeParams& out, const InferenceState& state, ConditionSink loop) {
  out.state = state;
  out.loop = loop;
  out.args[0] = &out.state;
  out.args[1] = &out.loop;
  out.params = {};
  out.params.func = reinterpret_cast<void*>(&begin_kernel);
  out.params.gridDim = dim3(1);
  out.params.blockDim = dim3(kRowThreads);
  out.params.sharedMemBytes = 0;
  out.params.kernelParams = out.args;
  out.params.extra = nullptr;
}

}  // namespace condbench::cuda
