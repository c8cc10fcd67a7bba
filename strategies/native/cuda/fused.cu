#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>

#include "condbench/cuda/check.h"
#include "condbench/cuda/linear_kernels.cuh"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "native/cuda/fused.h"

namespace condbench::cuda {

namespace {

// --- the single-block kernel ------------------------------------------------------------------------

constexpr int kTileOutputs = 32;
constexpr int kSlices = 8;
constexpr int kThreads = kTileOutputs * kSlices;
constexpr int kRowsPerBlock = 4;  // from this batch on, a block takes this many rows

// A block's shared memory for Rows rows, all of it dynamic (the kernel declares none statically, so
// this is the whole of what it asks for against the device's limit): the slices' partial sums,
// each row's two activation buffers and logits, then each row's "still running" flag and their
// count.
struct SharedLayout {
  size_t floats, ints;
  static SharedLayout of(int rows, int hidden, int num_classes) {
    return {static_cast<size_t>(rows) * (2 * static_cast<size_t>(hidden) + num_classes + kThreads),
            static_cast<size_t>(rows) + 1};
  }
  size_t bytes() const { return floats * sizeof(float) + ints * sizeof(int); }
};

// One Linear for the block's rows, held in shared memory: 32 outputs at a time, the sum over i
// split in 8 slices (math::linear_partial_rows, each weight loaded once for every row) and added
// to the bias by the first slice's threads. The caller points rows past `rows` (a short last block)
// at row 0's input: they are computed, since the row count is a template constant, and not stored.
template <int Rows>
__device__ void linear_in_block(const DeviceLinear& layer, const float* const* x, float* const* y, int rows, bool relu,
                                float* partial) {
  const int lane = threadIdx.x % kTileOutputs, slice = threadIdx.x / kTileOutputs;
  const int chunk = (layer.in + kSlices - 1) / kSlices;
  const int begin = min(layer.in, slice * chunk), end = min(layer.in, begin + chunk);
  for (int o0 = 0; o0 < layer.out; o0 += kTileOutputs) {
    const int o = o0 + lane;
    float sums[Rows];
    if (o < layer.out) {
      math::linear_partial_rows<Rows>(layer.wt, x, begin, end, layer.pitch, o, sums);
    } else {
      for (float& v : sums) v = 0.0f;
    }
    for (int r = 0; r < Rows; ++r) partial[(slice * Rows + r) * kTileOutputs + lane] = sums[r];
    __syncthreads();
    if (slice == 0 && o < layer.out) {
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        if (r >= rows) break;
        float acc = layer.bias[o];
        for (int s = 0; s < kSlices; ++s) acc += partial[(s * Rows + r) * kTileOutputs + lane];
        y[r][o] = relu && acc < 0.0f ? 0.0f : acc;
      }
    }
    __syncthreads();
  }
}

// Rows rows per thread block (one launch for the whole batch): the rows' activations never leave
// shared memory, each weight is read once per block for all of its rows, and the block stops when
// its last row has left. A row that leaves writes its logits at once; the block goes on for the
// others (its buffers keep being written, never read).
template <int Rows>
__global__ void __launch_bounds__(kThreads) fused_kernel(InferenceState st, const DeviceLinear* table) {
  extern __shared__ float shared[];
  const int hidden = st.hidden_size, classes = st.num_classes;
  const int row0 = blockIdx.x * Rows;
  const int rows = min(Rows, st.batch - row0);
  float* partial = shared;
  // Row r's buffers: two activation vectors (stage s writes the one at s & 1), then its logits.
  // Pointer arrays are filled per stage with constant indices, so they stay in registers. A row
  // past `rows` (a short last block) reads row 0's buffers, which are written, so no uninitialised
  // shared memory is read; its own buffers are neither written nor read.
  auto own = [&](int r) { return shared + Rows * kThreads + static_cast<size_t>(r) * (2 * hidden + classes); };
  auto activation = [&](int s, int r) { return own(r) + (s & 1) * hidden; };
  auto source = [&](int r) { return r < rows ? r : 0; };
  float* logits[Rows];
  const float* input[Rows];
  for (int r = 0; r < Rows; ++r) {
    logits[r] = own(r) + 2 * hidden;
    input[r] = st.input + static_cast<size_t>(row0 + source(r)) * st.in_features;
  }
  int* live = reinterpret_cast<int*>(own(Rows));
  int& live_rows = live[Rows];
  if (threadIdx.x < Rows) live[threadIdx.x] = threadIdx.x < rows;
  if (threadIdx.x == 0) live_rows = rows;
  __syncthreads();

  // Thread r < rows owns row r's exit: it tests the row and, when it leaves, writes its result.
  auto leave = [&](int r, int exit_id) {
    for (int c = 0; c < classes; ++c) st.logits[(row0 + r) * classes + c] = own(r)[2 * hidden + c];
    st.exit_id[row0 + r] = exit_id;
    live[r] = 0;
    atomicSub(&live_rows, 1);
  };
  float* h[Rows];
  const float* x[Rows];
  const float* hx[Rows];  // h as the head reads it
  for (int s = 0; s < st.blocks; ++s) {
    for (int r = 0; r < Rows; ++r) {  // a select per row: an array picked at run time would live in memory
      h[r] = activation(s, r);
      hx[r] = activation(s, source(r));
      x[r] = s == 0 ? input[r] : activation(s + 1, source(r));  // (s - 1) & 1 == (s + 1) & 1
    }
    linear_in_block<Rows>(table[s], x, h, rows, true, partial);
    linear_in_block<Rows>(table[st.blocks + s], hx, logits, rows, false, partial);
    const int r = threadIdx.x;
    if (r < rows && live[r] && math::exit_fires(math::max_softmax(own(r) + 2 * hidden, classes), st.thresholds[s]))
      leave(r, s + 1);
    __syncthreads();
    if (live_rows == 0) return;
    __syncthreads();  // every thread has read live_rows before a later exit test changes it
  }
  for (int r = 0; r < Rows; ++r) hx[r] = activation(st.blocks - 1, source(r));
  linear_in_block<Rows>(table[2 * st.blocks], hx, logits, rows, false, partial);
  const int r = threadIdx.x;
  if (r < rows && live[r]) leave(r, st.blocks + 1);
}

// --- the persistent kernel --------------------------------------------------------------------------

namespace cg = cooperative_groups;

// Which rows still run, as each block of the persistent kernel keeps it: a bit per row in its
// shared memory. Every block takes every exit decision itself, from the same logits with the same
// arithmetic, so all hold the same bits and return together without a barrier to share them.
struct RowBits {
  const unsigned* bits;
  __device__ bool operator()(int row) const { return (bits[row / kWarpSize] >> (row % kWarpSize)) & 1u; }
};

__device__ inline float* hidden_buffer(const InferenceState& st, int s) { return s & 1 ? st.hidden[1] : st.hidden[0]; }

// One Linear over the whole grid: each block takes every gridDim.x-th item of the plan. Rows is
// the GEMV's rows per warp, or 0 for the GEMM.
template <int Rows>
__device__ void grid_linear(const device::LinearOperands& op, const LinearPlan& plan, const InferenceState& st,
                            const RowBits& live) {
  if constexpr (Rows == 0) {
    __shared__ device::GemmShared shared;
    for (int item = static_cast<int>(blockIdx.x); item < plan.items; item += static_cast<int>(gridDim.x))
      device::gemm_item<device::Coherent>(op, plan, item, st.batch, live, shared, st.split_partials, st.split_arrivals);
  } else {
    __shared__ device::GemvShared shared;
    for (int item = static_cast<int>(blockIdx.x); item < plan.items; item += static_cast<int>(gridDim.x))
      device::gemv_item<Rows, device::Coherent>(op, plan, item, st.batch, live, shared);
  }
}

// A row leaving takes its head's logits (written by other blocks of this launch: read through L2).
__device__ inline void take_head_logits(const InferenceState& st, int row) {
  const size_t at = static_cast<size_t>(row) * st.num_classes;
  for (int c = 0; c < st.num_classes; ++c) st.logits[at + c] = __ldcg(st.head_logits + at + c);
}

// Exit test s in one block: each warp takes 32 rows at a time, a lane per row; a running row whose
// confidence exceeds the threshold leaves (block 0, `writes`, stores its result), and the bits of
// those staying replace the word. Returns the rows still running, the same in every block.
__device__ int exit_test(const InferenceState& st, unsigned* bits, int s, bool writes, int* total) {
  const float threshold = st.thresholds[s];
  const int words = (st.batch + kWarpSize - 1) / kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize, lane = static_cast<int>(threadIdx.x) % kWarpSize;
  int staying = 0;
  for (int w = warp; w < words; w += kLinearWarps) {
    const int row = w * kWarpSize + lane;
    const bool running = row < st.batch && ((bits[w] >> lane) & 1u);
    bool stays = running;
    if (running) {
      const float* logits = st.head_logits + static_cast<size_t>(row) * st.num_classes;
      const float confidence = math::max_softmax_of([logits](int j) { return __ldcg(logits + j); }, st.num_classes);
      if (math::exit_fires(confidence, threshold)) {
        stays = false;
        if (writes) {
          take_head_logits(st, row);
          st.exit_id[row] = s + 1;
        }
      }
    }
    const unsigned still = __ballot_sync(0xffffffffu, stays);
    if (lane == 0) {
      bits[w] = still;
      staying += __popc(still);
    }
  }
  return device::block_sum(staying, total);  // its barriers also publish the new bits to the block
}

// The whole forward in one cooperative launch:
//
//   [block s | grid barrier | head s | grid barrier | exit test s in every block] for each block s,
//   then the final head | grid barrier | the rows left take the final exit
//
// returning as soon as no row runs. Block 0 writes the results and the FLOP counter (the rows of
// every group computed, as the stage kernels count them). input_vector: the caller's input rows can
// be read as float4.
template <int Rows>
__global__ void __launch_bounds__(kLinearThreads, 1)
    persistent_kernel(InferenceState st, const DeviceLinear* table, int input_vector) {
  const cg::grid_group grid = cg::this_grid();
  extern __shared__ unsigned live_bits[];
  __shared__ int total;
  const int words = (st.batch + kWarpSize - 1) / kWarpSize;
  for (int w = static_cast<int>(threadIdx.x); w < words; w += static_cast<int>(blockDim.x)) {
    const int rows = st.batch - w * kWarpSize;
    live_bits[w] = rows >= kWarpSize ? 0xffffffffu : (1u << rows) - 1u;
  }
  __syncthreads();
  const RowBits live{live_bits};
  const bool writes = blockIdx.x == 0;
  double flops = 0.0;
  for (int s = 0; s < st.blocks; ++s) {
    const DeviceLinear block = table[s], head = table[st.blocks + s];
    float* h = hidden_buffer(st, s);
    const device::LinearOperands block_op =
        s == 0
            ? device::LinearOperands{block, st.input, st.in_features, input_vector != 0, h, st.hidden_pitch, true}
            : device::LinearOperands{block, hidden_buffer(st, s - 1), st.hidden_pitch, true, h, st.hidden_pitch, true};
    grid_linear<Rows>(block_op, st.block_plan, st, live);
    grid.sync();
    grid_linear<Rows>({head, h, st.hidden_pitch, true, st.head_logits, st.num_classes, false}, st.head_plan, st, live);
    grid.sync();
    if (writes) {
      const double block_rows = device::computed_rows(live, st.batch, st.block_plan.group_rows, &total);
      const double head_rows = device::computed_rows(live, st.batch, st.head_plan.group_rows, &total);
      flops += 2.0 * (block_rows * block.in * block.out + head_rows * head.in * head.out);
    }
    if (exit_test(st, live_bits, s, writes, &total) == 0) {
      if (writes && threadIdx.x == 0) *st.flops = flops;
      return;  // every block alike: no barrier is left waiting
    }
  }
  const DeviceLinear final_head = table[2 * st.blocks];
  grid_linear<Rows>(
      {final_head, hidden_buffer(st, st.blocks - 1), st.hidden_pitch, true, st.head_logits, st.num_classes, false},
      st.head_plan, st, live);
  grid.sync();
  if (!writes) return;
  const double rows = device::computed_rows(live, st.batch, st.head_plan.group_rows, &total);
  for (int r = static_cast<int>(threadIdx.x); r < st.batch; r += static_cast<int>(blockDim.x))
    if (live(r)) {
      take_head_logits(st, r);
      st.exit_id[r] = st.blocks + 1;
    }
  if (threadIdx.x == 0) *st.flops = flops + rows * 2.0 * final_head.in * final_head.out;
}

// The persistent kernel's instantiation for a plan: the GEMV's rows per warp, or the GEMM.
const void* persistent_function(const LinearPlan& plan) {
  if (plan.kernel == LinearKernel::gemm) return reinterpret_cast<const void*>(&persistent_kernel<0>);
  switch (plan.group_rows) {
    case 1:
      return reinterpret_cast<const void*>(&persistent_kernel<1>);
    case 2:
      return reinterpret_cast<const void*>(&persistent_kernel<2>);
    case 4:
      return reinterpret_cast<const void*>(&persistent_kernel<4>);
    default:
      return reinterpret_cast<const void*>(&persistent_kernel<kGemvMaxRows>);
  }
}

// A bit per row.
size_t persistent_shared_bytes(int batch) {
  return static_cast<size_t>((batch + kWarpSize - 1) / kWarpSize) * sizeof(unsigned);
}

}  // namespace

FusedLaunch fused_launch(int batch, int hidden, int num_classes, size_t shared_limit) {
  const size_t several = SharedLayout::of(kRowsPerBlock, hidden, num_classes).bytes();
  if (batch >= kRowsPerBlock && several <= shared_limit) return {kRowsPerBlock, several};
  return {1, SharedLayout::of(1, hidden, num_classes).bytes()};
}

size_t fused_static_shared_bytes() {
  cudaFuncAttributes one{}, several{};
  CONDBENCH_CUDA_CHECK(cudaFuncGetAttributes(&one, fused_kernel<1>));
  CONDBENCH_CUDA_CHECK(cudaFuncGetAttributes(&several, fused_kernel<kRowsPerBlock>));
  return std::max(one.sharedSizeBytes, several.sharedSizeBytes);
}

namespace {
std::optional<FusedKernel> forced_kernel;  // testing::ForcedFusedKernel; prepared on one thread

bool have_gpu() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();  // no GPU: nothing to say here; the harness skips for that itself
    return false;
  }
  return true;
}

int current_device() {
  int device = 0;
  CONDBENCH_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// The dynamic shared memory a block of the single-block kernel may ask for: the device's opt-in
// limit less what the kernel declares statically (nothing, today).
size_t shared_limit() {
  int limit = 0;
  CONDBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, current_device()));
  const size_t fixed = fused_static_shared_bytes();
  return static_cast<size_t>(limit) > fixed ? static_cast<size_t>(limit) - fixed : 0;
}

// Persistent blocks that fit on one multiprocessor at a batch (the occupancy API, with the kernel's
// registers and shared memory), 0 where the device cannot launch cooperatively at all.
int persistent_blocks_per_sm(int batch) {
  int cooperative = 0;
  CONDBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, current_device()));
  if (!cooperative) return 0;
  // The instantiation depends on the batch alone (the GEMV's rows, or the GEMM).
  const LinearPlan shape = plan_linear(batch, 1, 1, 1);
  int blocks = 0;
  CONDBENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, persistent_function(shape),
                                                                     kLinearThreads, persistent_shared_bytes(batch)));
  return blocks;
}
}  // namespace

FusedChoice fused_choice(int hidden, int num_classes, int batch) {
  const bool gpu = have_gpu();
  const size_t single_bytes = SharedLayout::of(1, hidden, num_classes).bytes();
  const bool single_fits = !gpu || single_bytes <= shared_limit();
  const bool persistent_fits = !gpu || persistent_blocks_per_sm(batch) > 0;
  if (forced_kernel) {
    const bool fits = *forced_kernel == FusedKernel::single_block ? single_fits : persistent_fits;
    if (fits) return {forced_kernel, {}};
  }
  if (const std::optional<FusedKernel> kernel = choose_fused_kernel(hidden, single_fits, persistent_fits))
    return {kernel, {}};
  return {std::nullopt, "hidden " + std::to_string(hidden) + " needs " + std::to_string(single_bytes) +
                            " bytes of shared memory per block in the single-block kernel (this GPU allows " +
                            std::to_string(shared_limit()) + "), and this GPU cannot launch the persistent one"};
}

std::optional<std::string> fused_unsupported(int hidden, int num_classes, int batch) {
  FusedChoice choice = fused_choice(hidden, num_classes, batch);
  if (choice.kernel && forced_kernel && *choice.kernel != *forced_kernel)
    return std::string(fused_kernel_name(*forced_kernel)) + " kernel does not fit this model on this GPU";
  if (choice.kernel) return std::nullopt;
  return std::move(choice.why_not);
}

FusedLaunch fused_prepare(const InferenceState& state, int multiprocessors) {
  if (const std::optional<std::string> why = fused_unsupported(state.hidden_size, state.num_classes, state.batch))
    fail("fused (cuda): " + *why);
  const FusedKernel kernel = *fused_choice(state.hidden_size, state.num_classes, state.batch).kernel;
  if (kernel == FusedKernel::persistent) {
    const int most_items = std::max(state.block_plan.items, state.head_plan.items);
    const int grid = persistent_grid(multiprocessors, persistent_blocks_per_sm(state.batch), most_items);
    return {1, persistent_shared_bytes(state.batch), kernel, grid};
  }
  const FusedLaunch launch = fused_launch(state.batch, state.hidden_size, state.num_classes, shared_limit());
  const int bytes = static_cast<int>(launch.shared_bytes);
  if (launch.rows == 1) {
    CONDBENCH_CUDA_CHECK(cudaFuncSetAttribute(fused_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  } else {
    CONDBENCH_CUDA_CHECK(
        cudaFuncSetAttribute(fused_kernel<kRowsPerBlock>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
  return launch;
}

void launch_fused(const FusedLaunch& launch, const InferenceState& state, const DeviceLinear* table,
                  cudaStream_t stream) {
  if (launch.kernel == FusedKernel::persistent) {
    // The caller's input, read in place: as float4 where its rows allow (a host check per run).
    int input_vector = state.in_features % kVectorWidth == 0 && reinterpret_cast<uintptr_t>(state.input) % 16 == 0;
    InferenceState st = state;
    const DeviceLinear* layers = table;
    void* args[] = {&st, &layers, &input_vector};
    CONDBENCH_CUDA_CHECK(cudaLaunchCooperativeKernel(persistent_function(state.block_plan), dim3(launch.grid),
                                                     dim3(kLinearThreads), args, launch.shared_bytes, stream));
    return;
  }
  const int grid = (state.batch + launch.rows - 1) / launch.rows;
  if (launch.rows == 1) {
    fused_kernel<1><<<grid, kThreads, launch.shared_bytes, stream>>>(state, table);
  } else {
    fused_kernel<kRowsPerBlock><<<grid, kThreads, launch.shared_bytes, stream>>>(state, table);
  }
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

namespace testing {
ForcedFusedKernel::ForcedFusedKernel(FusedKernel kernel) : previous_(forced_kernel) { forced_kernel = kernel; }
ForcedFusedKernel::~ForcedFusedKernel() { forced_kernel = previous_; }
}  // namespace testing

}  // namespace condbench::cuda
