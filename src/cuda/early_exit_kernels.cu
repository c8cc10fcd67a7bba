#include "condbench/cuda/check.h"
#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/exit_math.h"

namespace condbench::cuda {

namespace {

// A Linear kernel's thread block: 32 consecutive outputs (coalesced weight reads in the native
// layout) x 8 slices of the input dimension, for 4 rows, so each weight read serves 4 rows.
constexpr int kTileOutputs = 32;
constexpr int kSlices = 8;
constexpr int kRowsPerBlock = 4;
constexpr int kRowThreads = 256;  // begin, exit test, finish: one block strides over the rows

__device__ inline int stage_of(StageRef ref) { return ref.dynamic ? *ref.dynamic : ref.fixed; }

__global__ void begin_kernel(InferenceState st, ConditionSink loop) {
  const int n = st.batch * st.in_features;
  for (int i = threadIdx.x; i < n; i += blockDim.x) st.staged_input[i] = st.input[i];
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x) st.active[r] = 1;
  if (threadIdx.x == 0) {
    *st.active_count = st.batch;
    *st.stage = 0;
    *st.flops = 0.0;
    if (loop.enabled) cudaGraphSetConditional(loop.handle, st.batch > 0 ? 1u : 0u);
  }
}

__global__ void linear_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, int is_head) {
  if (*st.active_count == 0) return;  // every row has left: nothing to do
  const int s = stage_of(ref);
  const DeviceLinear layer = table[is_head ? st.blocks + s : s];
  const float* x;
  float* y;
  int y_stride;
  if (!is_head) {
    x = s == 0 ? st.staged_input : st.hidden[(s - 1) & 1];
    y = st.hidden[s & 1];
    y_stride = st.hidden_size;
  } else {
    x = st.hidden[(s == st.blocks ? s - 1 : s) & 1];
    y = st.logits;
    y_stride = st.num_classes;
  }
  const int o = blockIdx.x * kTileOutputs + threadIdx.x;
  const int chunk = (layer.in + kSlices - 1) / kSlices;
  const int begin = min(layer.in, static_cast<int>(threadIdx.y) * chunk);
  const int end = min(layer.in, begin + chunk);
  const int row0 = blockIdx.y * kRowsPerBlock;

  __shared__ float partial[kSlices][kRowsPerBlock][kTileOutputs];
  bool live[kRowsPerBlock];
  for (int r = 0; r < kRowsPerBlock; ++r) {
    const int row = row0 + r;
    live[r] = row < st.batch && st.active[row];
    partial[threadIdx.y][r][threadIdx.x] =
        live[r] && o < layer.out ? math::linear_partial(layer.wt, x + row * layer.in, begin, end, layer.pitch, o)
                                 : 0.0f;
  }
  __syncthreads();
  if (threadIdx.y != 0 || o >= layer.out) return;
  for (int r = 0; r < kRowsPerBlock; ++r) {
    if (!live[r]) continue;
    float acc = layer.bias[o];
    for (int slice = 0; slice < kSlices; ++slice) acc += partial[slice][r][threadIdx.x];
    y[(row0 + r) * y_stride + o] = !is_head && acc < 0.0f ? 0.0f : acc;
  }
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

__global__ void exit_test_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, ConditionSink next) {
  const int s = stage_of(ref);
  const float threshold = st.thresholds[s];
  int entered = 0, staying = 0;
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x) {
    if (!st.active[r]) continue;
    ++entered;
    const float confidence = math::max_softmax(st.logits + r * st.num_classes, st.num_classes);
    if (math::exit_fires(confidence, threshold)) {
      st.exit_id[r] = s + 1;
      st.active[r] = 0;
    } else {
      ++staying;
    }
  }
  __shared__ int total;
  const int rows_in = block_sum(entered, &total);
  const int rows_left = block_sum(staying, &total);
  if (threadIdx.x != 0) return;
  const DeviceLinear block = table[s], head = table[st.blocks + s];
  *st.flops += static_cast<double>(rows_in) * 2.0 *
               (static_cast<double>(block.in) * block.out + static_cast<double>(head.in) * head.out);
  *st.active_count = rows_left;
  if (next.is_loop) *st.stage = s + 1;
  // Set on every launch: the handle has no default value.
  if (next.enabled)
    cudaGraphSetConditional(next.handle, rows_left > 0 && (!next.is_loop || s + 1 < st.blocks) ? 1u : 0u);
}

__global__ void finish_kernel(InferenceState st, const DeviceLinear* table) {
  int left = 0;
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x)
    if (st.active[r]) {
      st.exit_id[r] = st.blocks + 1;
      ++left;
    }
  __shared__ int total;
  const int rows = block_sum(left, &total);
  if (threadIdx.x == 0) {
    const DeviceLinear final_head = table[2 * st.blocks];
    *st.flops += static_cast<double>(rows) * 2.0 * final_head.in * final_head.out;
  }
}

dim3 linear_grid(int outputs, int batch) {
  return dim3((outputs + kTileOutputs - 1) / kTileOutputs, (batch + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

void launch_begin(const InferenceState& state, ConditionSink loop, cudaStream_t stream) {
  begin_kernel<<<1, kRowThreads, 0, stream>>>(state, loop);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_block(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  // Every block has `hidden` outputs, so the grid is the same whatever the stage.
  linear_kernel<<<linear_grid(state.hidden_size, state.batch), dim3(kTileOutputs, kSlices), 0, stream>>>(state, table,
                                                                                                         stage, 0);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_head(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  linear_kernel<<<linear_grid(state.num_classes, state.batch), dim3(kTileOutputs, kSlices), 0, stream>>>(state, table,
                                                                                                         stage, 1);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_exit_test(const InferenceState& state, const DeviceLinear* table, StageRef stage, ConditionSink next,
                      cudaStream_t stream) {
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
