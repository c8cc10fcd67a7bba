#pragma once
// The kernels of the native CUDA strategies, behind launch functions that host code (compiled by
// the C++ compiler) calls. One inference is a fixed sequence of stages:
//
//   begin -> [block s -> head s -> exit test s] for s = 0..B-1 -> final head -> finish
//
// device_flag launches it as it stands; device_flag_graph captures it; graph_cond nests each
// stage after the first in an IF node set by the previous exit test; graph_while runs the stages
// as the body of one WHILE node. Block and head kernels (a warp-per-output GEMV up to 8 rows, a
// tiled GEMM above: linear_plan.h) compute rows in groups and skip a group whose rows have all
// exited, store only rows still active, and return at once when no row is active, so the same
// kernels serve all four and they differ only in control flow. Heads write head_logits; the exit
// test copies a leaving row's logits into the result, so masked_graph_cublas, whose cuBLAS heads
// write every row, runs the same exit tests.
#include <cuda_runtime_api.h>

#include "condbench/cuda/device_model.h"
#include "condbench/cuda/linear_plan.h"

namespace condbench::cuda {

// Device buffers of one inference (all pointers are device memory). Activation rows are padded to
// a whole number of float4 (input_pitch, hidden_pitch), the padding zero: the Linear kernels read
// them as vectors.
struct InferenceState {
  const float* input;       // the caller's [batch][in_features], copied by begin
  float* staged_input;      // [batch][input_pitch]: block 0 reads this, so graphs hold one address
  float* hidden[2];         // [batch][hidden_pitch]: block s writes hidden[s % 2]
  float* head_logits;       // [batch][num_classes]: the last head's logits, for every row it computed
  float* logits;            // [batch][num_classes]: the result; a row's exit test copies its head's logits here
  int* exit_id;             // [batch]: the result
  int* active;              // [batch]: 1 while the row runs
  int* active_count;        // rows still running
  int* stage;               // the WHILE loop's stage counter
  int* blocks_run;          // exit tests run, one per block: which blocks a conditional graph ran
  int* heads_run;           // heads run, exit heads (with their tests) and the final head (finish)
  double* flops;            // Linear FLOPs executed (a counter read outside the timed region)
  const float* thresholds;  // [blocks]
  float* split_partials;    // GEMM split-K: one partial tile per work item (linear_plan.h)
  int* split_arrivals;      // GEMM split-K: per tile, the parts done so far (0 between launches)
  int batch, blocks, in_features, hidden_size, num_classes;
  int input_pitch, hidden_pitch;
  LinearPlan block_plan, head_plan;  // how the blocks' and the heads' Linears are launched
};

// The stage a kernel works on: fixed at capture, or read from device memory (the WHILE body,
// whose kernel arguments cannot change between iterations).
struct StageRef {
  int fixed;
  const int* dynamic;  // when set, the stage is *dynamic
};

// Where a kernel publishes "keep going": a conditional node's handle, or nothing.
struct ConditionSink {
  cudaGraphConditionalHandle handle;
  int enabled;
  int is_loop;  // WHILE: also require another stage, and advance state.stage
  // Tests only (testing::StuckCondition): 1 + the stage whose test sets the handle to "keep
  // going" even when no row is left (a WHILE still stops after the last block); 0: none.
  int stuck_open_at;
};

constexpr ConditionSink kNoCondition{0, 0, 0, 0};

// Resets the per-inference state and stages the input; sets `loop` (the WHILE handle) to run.
void launch_begin(const InferenceState& state, ConditionSink loop, cudaStream_t stream);
// Block `stage` (ReLU) for every active row.
void launch_block(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream);
// Exit head `stage` (stage == blocks: the final head) for every active row, into state.head_logits.
void launch_head(const InferenceState& state, const DeviceLinear* table, StageRef stage, cudaStream_t stream);
// The exit test after head `stage`: rows whose confidence exceeds the threshold leave with exit
// id stage+1 and their head's logits; publishes whether any row is left to `next`.
void launch_exit_test(const InferenceState& state, const DeviceLinear* table, StageRef stage, ConditionSink next,
                      cudaStream_t stream);
// Rows still active after the final head leave with exit id blocks+1 and its logits.
void launch_finish(const InferenceState& state, const DeviceLinear* table, cudaStream_t stream);

// The begin kernel's launch as a graph kernel node's parameters, so a graph can be pointed at a
// new input without recapture (cudaGraphExecKernelNodeSetParams). `args` must outlive the call.
struct BeginNodeParams {
  InferenceState state;
  ConditionSink loop;
  void* args[2];
  cudaKernelNodeParams params;
};
void make_begin_params(BeginNodeParams& out, const InferenceState& state, ConditionSink loop);

}  // namespace condbench::cuda
