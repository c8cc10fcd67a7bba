#pragma once
// Each model family's LibTorch forward, behind the neutral TorchLayers (include/condbench/model.h).
// `params` holds the model's parameters in parameter_specs order, already on the target device.
#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "condbench/model.h"

namespace condbench::families {

std::shared_ptr<const TorchLayers> mlp_layers(const ModelConfig& config, std::vector<at::Tensor> params);
std::shared_ptr<const TorchLayers> transformer_layers(const ModelConfig& config, std::vector<at::Tensor> params);

}  // namespace condbench::families
