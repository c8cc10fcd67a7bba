#pragma once
// The fused kernel's launch, callable from the C++ side of the strategy.
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "condbench/cuda/early_exit_kernels.h"

namespace condbench::cuda {

// How the kernel runs a batch: rows per thread block (4 from batch 4, so a block reads each
// weight once for 4 rows, where their activations fit in `shared_limit` bytes; else 1) and the
// dynamic shared memory that takes.
struct FusedLaunch {
  int rows;
  size_t shared_bytes;
};
FusedLaunch fused_launch(int batch, int hidden, int num_classes, size_t shared_limit);
// The shared memory the kernel declares statically (needs a GPU): counted against the limit.
size_t fused_static_shared_bytes();
// Why this GPU cannot run the kernel for a model (one row's activations do not fit in shared
// memory), or nullopt; nullopt without a GPU.
std::optional<std::string> fused_unsupported(int hidden, int num_classes);
// Raises the kernel's shared-memory limit when a model needs more than the default 48 KiB;
// throws condbench::Error when the device cannot give it.
FusedLaunch fused_prepare(int batch, int hidden, int num_classes);
// The whole early-exit forward for every row of state.input: one launch, launch.rows rows per
// thread block.
void launch_fused(const FusedLaunch& launch, const InferenceState& state, const DeviceLinear* table,
                  cudaStream_t stream);

}  // namespace condbench::cuda
