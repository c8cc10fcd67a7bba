#pragma once
// The fused kernels' launch, callable from the C++ side of the strategy. Two kernels, one launch
// per inference either way, every exit decided on the device (linear_plan.h's choose_fused_kernel
// picks one):
//  - single-block: a thread block per group of rows (4 from batch 4, where they fit), their
//    activations in shared memory, each block stopping when its rows have left;
//  - persistent: one cooperative grid over every multiprocessor, a grid-wide barrier between
//    dependent layers, the Linears as the stage kernels compute them (linear_kernels.cuh), every
//    block taking each exit decision itself and all returning once no row runs.
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/cuda/linear_plan.h"

namespace condbench::cuda {

// How the kernel runs a batch. Single-block: rows per thread block (4 from batch 4, so a block
// reads each weight once for 4 rows, where their activations fit in `shared_limit` bytes; else
// 1) and the dynamic shared memory that takes. Persistent: its grid and dynamic shared memory
// (a bit per row: which rows still run).
struct FusedLaunch {
  int rows;
  size_t shared_bytes;
  FusedKernel kernel = FusedKernel::single_block;
  int grid = 0;
};
// The single-block kernel's launch at a batch (host arithmetic).
FusedLaunch fused_launch(int batch, int hidden, int num_classes, size_t shared_limit);
// The shared memory the single-block kernel declares statically (needs a GPU): counted against
// the limit.
size_t fused_static_shared_bytes();
// Which kernel fused runs for a model at a batch on this GPU (the forced one in tests), or why it
// cannot run it; without a GPU, the rule's choice as if both fit.
struct FusedChoice {
  std::optional<FusedKernel> kernel;
  std::string why_not;  // when no kernel
};
FusedChoice fused_choice(int hidden, int num_classes, int batch);
// Why this GPU cannot run fused for a model at a batch, or nullopt; nullopt without a GPU.
std::optional<std::string> fused_unsupported(int hidden, int num_classes, int batch);
// Chooses the kernel for the prepared state and readies it (the single-block kernel's shared
// memory limit raised where a model needs more than the default 48 KiB; the persistent grid sized
// by the occupancy API); throws condbench::Error when the device cannot run either.
FusedLaunch fused_prepare(const InferenceState& state, int multiprocessors);
// The whole early-exit forward for every row of state.input: one launch.
void launch_fused(const FusedLaunch& launch, const InferenceState& state, const DeviceLinear* table,
                  cudaStream_t stream);

namespace testing {
// Tests only: while alive, fused strategies prepared, and fused_choice, take `kernel` whatever the
// rule says (where it fits), so each kernel is checked at every width.
class ForcedFusedKernel {
 public:
  explicit ForcedFusedKernel(FusedKernel kernel);
  ~ForcedFusedKernel();
  ForcedFusedKernel(const ForcedFusedKernel&) = delete;
  ForcedFusedKernel& operator=(const ForcedFusedKernel&) = delete;

 private:
  std::optional<FusedKernel> previous_;
};
}  // namespace testing

}  // namespace condbench::cuda
