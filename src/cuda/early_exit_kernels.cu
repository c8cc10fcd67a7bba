#include "condbench/cuda/check.h"
#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/cuda/linear_kernels.cuh"
#include "condbench/cuda/stuck_condition.h"
#include "condbench/exit_math.h"

namespace condbench::cuda {

namespace {

constexpr int kRowThreads = 256;  // begin, exit test, finish: one block strides over the rows

__device__ inline int stage_of(StageRef ref) { return ref.dynamic ? *ref.dynamic : ref.fixed; }

__global__ void begin_kernel(InferenceState st, ConditionSink loop) {
  const int n = st.batch * st.in_features;  // into rows of input_pitch, whose padding stays zero
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    st.staged_input[(i / st.in_features) * st.input_pitch + i % st.in_features] = st.input[i];
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

// Block s writes activation buffer s % 2. (A select, not st.hidden[k]: a variable index into a
// kernel argument copies the whole argument to local memory.)
__device__ inline float* hidden_buffer(const InferenceState& st, int s) { return s & 1 ? st.hidden[1] : st.hidden[0]; }

// What a block or head launch computes at a stage.
__device__ inline device::LinearOperands operands_of(const InferenceState& st, const DeviceLinear* table, StageRef ref,
                                                     int is_head) {
  const int s = stage_of(ref);
  if (!is_head) {
    const bool first = s == 0;
    return {table[s],
            first ? st.staged_input : hidden_buffer(st, s - 1),
            first ? st.input_pitch : st.hidden_pitch,
            true,
            hidden_buffer(st, s),
            st.hidden_pitch,
            true};
  }
  return {table[st.blocks + s],
          hidden_buffer(st, s == st.blocks ? s - 1 : s),
          st.hidden_pitch,
          true,
          st.head_logits,
          st.num_classes,
          false};
}

// Whether a row still runs, as the stage kernels see it: the exit tests' flags.
struct ActiveFlag {
  const int* active;
  __device__ bool operator()(int row) const { return active[row] != 0; }
};

// One GEMV item per thread block: batches up to kGemvMaxRows, every row in one group. (At least one
// block per multiprocessor, not more, is what __launch_bounds__ asks: it leaves ptxas the
// registers to issue a step's loads before its first multiply instead of one pair at a time.)
template <int Rows>
__global__ void __launch_bounds__(kLinearThreads, 1)
    gemv_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, int is_head) {
  if (*st.active_count == 0) return;  // every row has left: nothing to do
  __shared__ device::GemvShared shared;
  const LinearPlan plan = is_head ? st.head_plan : st.block_plan;
  device::gemv_item<Rows, device::ReadOnly>(operands_of(st, table, ref, is_head), plan, static_cast<int>(blockIdx.x),
                                            st.batch, ActiveFlag{st.active}, shared);
}

// One GEMM item per thread block: a 64-row tile, or a part of its sum.
__global__ void __launch_bounds__(kLinearThreads, 1)
    gemm_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, int is_head) {
  if (*st.active_count == 0) return;
  __shared__ device::GemmShared shared;
  const LinearPlan plan = is_head ? st.head_plan : st.block_plan;
  device::gemm_item<device::ReadOnly>(operands_of(st, table, ref, is_head), plan, static_cast<int>(blockIdx.x),
                                      st.batch, ActiveFlag{st.active}, shared, st.split_partials, st.split_arrivals);
}

// Launches a layer by its plan (fixed for a prepared strategy, so a captured graph holds one
// kernel and one grid whatever the stage).
void launch_linear(const InferenceState& state, const DeviceLinear* table, StageRef stage, int is_head,
                   cudaStream_t stream) {
  const LinearPlan& plan = is_head ? state.head_plan : state.block_plan;
  const dim3 grid(plan.items), threads(kLinearThreads);
  if (plan.kernel == LinearKernel::gemm) {
    gemm_kernel<<<grid, threads, 0, stream>>>(state, table, stage, is_head);
  } else if (plan.group_rows == 1) {
    gemv_kernel<1><<<grid, threads, 0, stream>>>(state, table, stage, is_head);
  } else if (plan.group_rows == 2) {
    gemv_kernel<2><<<grid, threads, 0, stream>>>(state, table, stage, is_head);
  } else if (plan.group_rows == 4) {
    gemv_kernel<4><<<grid, threads, 0, stream>>>(state, table, stage, is_head);
  } else {
    gemv_kernel<kGemvMaxRows><<<grid, threads, 0, stream>>>(state, table, stage, is_head);
  }
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

// A row leaving takes the logits of the head it leaves at.
__device__ inline void take_head_logits(const InferenceState& st, int row) {
  const size_t at = static_cast<size_t>(row) * st.num_classes;
  for (int c = 0; c < st.num_classes; ++c) st.logits[at + c] = st.head_logits[at + c];
}

__global__ void exit_test_kernel(InferenceState st, const DeviceLinear* table, StageRef ref, ConditionSink next) {
  const int s = stage_of(ref);
  const float threshold = st.thresholds[s];
  const DeviceLinear block = table[s], head = table[st.blocks + s];
  __shared__ int total;
  // Read before this test changes `active`; ends in a barrier, so no thread changes it early.
  const ActiveFlag live{st.active};
  const int block_rows = device::computed_rows(live, st.batch, st.block_plan.group_rows, &total);
  const int head_rows = device::computed_rows(live, st.batch, st.head_plan.group_rows, &total);
  int staying = 0;
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x) {
    if (!st.active[r]) continue;
    const float confidence = math::max_softmax(st.head_logits + r * st.num_classes, st.num_classes);
    if (math::exit_fires(confidence, threshold)) {
      take_head_logits(st, r);
      st.exit_id[r] = s + 1;
      st.active[r] = 0;
    } else {
      ++staying;
    }
  }
  const int rows_left = device::block_sum(staying, &total);
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
  const int rows = device::computed_rows(ActiveFlag{st.active}, st.batch, st.head_plan.group_rows, &total);
  for (int r = threadIdx.x; r < st.batch; r += blockDim.x)
    if (st.active[r]) {
      take_head_logits(st, r);
      st.exit_id[r] = st.blocks + 1;
    }
  if (threadIdx.x == 0) {
    *st.flops += static_cast<double>(rows) * 2.0 * final_head.in * final_head.out;
    *st.heads_run += 1;
  }
}

}  // namespace

void launch_begin(const InferenceState& state, ConditionSink loop, cudaStream_t stream) {
  begin_kernel<<<1, kRowThreads, 0, stream>>>(state, loop);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

void launch_block(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  // Every block has `hidden` outputs, so the grid is the same whatever the stage.
  launch_linear(state, table, stage, 0, stream);
}

void launch_head(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream) {
  launch_linear(state, table, stage, 1, stream);
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
