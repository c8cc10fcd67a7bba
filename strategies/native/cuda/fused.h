#pragma once
// The fused kernel's launch, callable from the C++ side of the strategy.
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "condbench/cuda/early_exit_kernels.h"

namespace condbench::cuda {

// Dynamic shared memory the kernel needs for a model, in bytes.
size_t fused_shared_bytes(int hidden, int num_classes);
// Why this GPU cannot run the kernel for a model (its rows' activations do not fit in shared
// memory), or nullopt; nullopt without a GPU.
std::optional<std::string> fused_unsupported(int hidden, int num_classes);
// Raises the kernel's shared-memory limit when a model needs more than the default 48 KiB;
// throws condbench::Error when the device cannot give it.
void fused_prepare(int hidden, int num_classes);
// The whole early-exit forward for every row of state.input: one launch, one thread block per row.
void launch_fused(const InferenceState& state, const DeviceLinear* table, cudaStream_t stream);

}  // namespace condbench::cuda
