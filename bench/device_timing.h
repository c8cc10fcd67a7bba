#pragma once
// The GPU side of the harness: device synchronisation outside the timed region, and the gpu_us
// counter (GPU time from CUDA events). Without the CUDA parts both do nothing.
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "condbench/strategy.h"

namespace condbench {

void synchronize_cuda_device();

// Mean GPU time in microseconds of `count` inferences walking `inputs`, from CUDA events recorded
// around each on the strategy's stream; nullopt for a strategy without one.
std::optional<double> gpu_time_us(Strategy& strategy, const std::vector<at::Tensor>& inputs,
                                  const std::vector<float>& thresholds, int count);

// Registers the primitive/cuda/... microbenchmarks (DESIGN §4).
void register_cuda_primitives();

}  // namespace condbench
