#pragma once
// The early-exit MLP as a LibTorch module (docs/design.md §1). Its parameter names are exactly those of
// the PyTorch module the question was asked about, so a state_dict saved from it loads unchanged.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "condbench/config.h"
#include "condbench/native_model.h"
#include "condbench/parameters.h"

namespace condbench {

// An ordered state_dict: (parameter name, tensor), as torch.save(model.state_dict()) holds it.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// The model's Linears as plain tensors on one device, for strategies that call at::linear.
struct TorchLayers {
  ModelConfig config;
  std::vector<at::Tensor> block_weight, block_bias;  // backbone.i
  std::vector<at::Tensor> head_weight, head_bias;    // exit{k+1} for k < blocks, final at blocks
};

class EarlyExitModelImpl : public torch::nn::Module {
 public:
  // Weights from seeded_parameters(config, seed).
  EarlyExitModelImpl(const ModelConfig& config, uint64_t seed);
  // Weights from a state_dict; the config must match it (see infer_config).
  EarlyExitModelImpl(const ModelConfig& config, const StateDict& state_dict);

  const ModelConfig& config() const { return config_; }

  // Replaces every parameter. Throws condbench::Error naming the first missing, unexpected or
  // wrongly shaped key; on error the model is unchanged.
  void load_state_dict(const StateDict& state_dict);
  StateDict state_dict() const;  // named_parameters() in spec order, on the CPU

  FlatParameters flat_parameters() const;
  NativeModel native() const { return NativeModel::from_parameters(config_, flat_parameters()); }
  TorchLayers layers(const at::Device& device) const;

  // max softmax at every exit head for every row, running the full depth: [rows, blocks].
  at::Tensor exit_confidences(const at::Tensor& x) const;

 private:
  void build();
  void assign(const FlatParameters& params);

  ModelConfig config_;
  torch::nn::ModuleList backbone_{nullptr};  // owns the names backbone.{i}
  std::vector<torch::nn::Linear> blocks_;    // the same modules, typed
  std::vector<torch::nn::Linear> exits_;
  torch::nn::Linear final_{nullptr};
};
TORCH_MODULE(EarlyExitModel);

// Reads the config a state_dict describes: in_features, hidden and blocks from the backbone,
// num_classes from the final head. Throws condbench::Error naming a key when it cannot.
ModelConfig infer_config(const StateDict& state_dict);

// Throws condbench::Error naming the first missing, unexpected, non-float or wrongly shaped key of
// `state_dict` for a model of `config`. Reads no tensor data, so it also checks meta tensors.
void check_state_dict(const ModelConfig& config, const StateDict& state_dict);

}  // namespace condbench
