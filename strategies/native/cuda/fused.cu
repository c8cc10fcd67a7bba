#include "condbench/cuda/check.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "native/cuda/fused.h"

#include <algorithm>

namespace condbench::cuda {

namespace {

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
// The dynamic shared memory a block may ask for: the device's opt-in limit less what the kernel
// declares statically (nothing, today), or nullopt without a GPU.
std::optional<size_t> shared_limit() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();  // no GPU: nothing to say here; the harness skips for that itself
    return std::nullopt;
  }
  int device = 0, limit = 0;
  CONDBENCH_CUDA_CHECK(cudaGetDevice(&device));
  CONDBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const size_t fixed = fused_static_shared_bytes();
  return static_cast<size_t>(limit) > fixed ? static_cast<size_t>(limit) - fixed : 0;
}
}  // namespace

std::optional<std::string> fused_unsupported(int hidden, int num_classes) {
  const std::optional<size_t> limit = shared_limit();
  if (!limit) return std::nullopt;
  const size_t bytes = SharedLayout::of(1, hidden, num_classes).bytes();
  if (bytes <= *limit) return std::nullopt;
  return "hidden " + std::to_string(hidden) + " needs " + std::to_string(bytes) +
         " bytes of shared memory per block; this GPU allows " + std::to_string(*limit);
}

FusedLaunch fused_prepare(int batch, int hidden, int num_classes) {
  if (const std::optional<std::string> why = fused_unsupported(hidden, num_classes)) fail("fused (cuda): " + *why);
  const FusedLaunch launch = fused_launch(batch, hidden, num_classes, *shared_limit());
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
  const int grid = (state.batch + launch.rows - 1) / launch.rows;
  if (launch.rows == 1) {
    fused_kernel<1><<<grid, kThreads, launch.shared_bytes, stream>>>(state, table);
  } else {
    fused_kernel<kRowsPerBlock><<<grid, kThreads, launch.shared_bytes, stream>>>(state, table);
  }
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
