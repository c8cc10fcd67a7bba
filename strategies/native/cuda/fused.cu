#include "condbench/cuda/check.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "native/cuda/fused.h"

namespace condbench::cuda {

namespace {

constexpr int kTileOutputs = 32;
constexpr int kSlices = 8;
constexpr int kThreads = kTileOutputs * kSlices;

// One Linear for one row held in shared memory: 32 outputs at a time, the sum over i split in 8
// slices (math::linear_partial) and added to the bias by the first slice's threads.
__device__ void linear_in_block(const DeviceLinear& layer, const float* x, float* y, bool relu, float* partial) {
  const int lane = threadIdx.x % kTileOutputs, slice = threadIdx.x / kTileOutputs;
  const int chunk = (layer.in + kSlices - 1) / kSlices;
  const int begin = min(layer.in, slice * chunk), end = min(layer.in, begin + chunk);
  for (int o0 = 0; o0 < layer.out; o0 += kTileOutputs) {
    const int o = o0 + lane;
    partial[threadIdx.x] = o < layer.out ? math::linear_partial(layer.wt, x, begin, end, layer.pitch, o) : 0.0f;
    __syncthreads();
    if (slice == 0 && o < layer.out) {
      float acc = layer.bias[o];
      for (int s = 0; s < kSlices; ++s) acc += partial[s * kTileOutputs + lane];
      y[o] = relu && acc < 0.0f ? 0.0f : acc;
    }
    __syncthreads();
  }
}

// One thread block per row: the row's activations never leave shared memory, and the block stops
// at the row's own exit. One launch for the whole batch.
__global__ void __launch_bounds__(kThreads) fused_kernel(InferenceState st, const DeviceLinear* table) {
  extern __shared__ float shared[];
  float* h[2] = {shared, shared + st.hidden_size};
  float* logits = shared + 2 * st.hidden_size;
  float* partial = logits + st.num_classes;
  __shared__ int leaves;

  const int row = blockIdx.x;
  const float* x = st.input + row * st.in_features;
  float* out = st.logits + row * st.num_classes;
  int exit_id = st.blocks + 1;
  for (int s = 0; s < st.blocks; ++s) {
    linear_in_block(table[s], s == 0 ? x : h[(s - 1) & 1], h[s & 1], true, partial);
    linear_in_block(table[st.blocks + s], h[s & 1], logits, false, partial);
    if (threadIdx.x == 0) leaves = math::exit_fires(math::max_softmax(logits, st.num_classes), st.thresholds[s]);
    __syncthreads();
    if (leaves) {
      exit_id = s + 1;
      break;
    }
  }
  if (exit_id == st.blocks + 1) linear_in_block(table[2 * st.blocks], h[(st.blocks - 1) & 1], logits, false, partial);
  for (int c = threadIdx.x; c < st.num_classes; c += blockDim.x) out[c] = logits[c];
  if (threadIdx.x == 0) st.exit_id[row] = exit_id;
}

}  // namespace

size_t fused_shared_bytes(int hidden, int num_classes) {
  return (2 * static_cast<size_t>(hidden) + num_classes + kThreads) * sizeof(float);
}

std::optional<std::string> fused_unsupported(int hidden, int num_classes) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();  // no GPU: nothing to say here; the harness skips for that itself
    return std::nullopt;
  }
  const size_t bytes = fused_shared_bytes(hidden, num_classes);
  int device = 0, limit = 0;
  CONDBENCH_CUDA_CHECK(cudaGetDevice(&device));
  CONDBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes <= static_cast<size_t>(limit)) return std::nullopt;
  return "hidden " + std::to_string(hidden) + " needs " + std::to_string(bytes) +
         " bytes of shared memory per block; this GPU allows " + std::to_string(limit);
}

void fused_prepare(int hidden, int num_classes) {
  const size_t bytes = fused_shared_bytes(hidden, num_classes);
  if (const std::optional<std::string> why = fused_unsupported(hidden, num_classes)) fail("fused (cuda): " + *why);
  CONDBENCH_CUDA_CHECK(
      cudaFuncSetAttribute(fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

void launch_fused(const InferenceState& state, const DeviceLinear* table, cudaStream_t stream) {
  fused_kernel<<<state.batch, kThreads, fused_shared_bytes(state.hidden_size, state.num_classes), stream>>>(state,
                                                                                                            table);
  CONDBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace condbench::cuda
