#pragma once
// The early-exit model of any family as a LibTorch module (docs/design.md §1), and its blocks
// and heads as LibTorch calls. Parameter names are exactly those of the PyTorch modules the family
// mirrors, so a state_dict saved from one loads unchanged.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "condbench/config.h"
#include "condbench/family.h"
#include "condbench/native_model.h"
#include "condbench/parameters.h"
#include "condbench/torch_exit_rule.h"

namespace condbench {

// An ordered state_dict: (parameter name, tensor), as torch.save(model.state_dict()) holds it.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// The model's blocks and heads as LibTorch calls on one device: what the torch-engine strategies
// and the calibration run, whatever the family. Each family implements it once (ModelFamily::layers,
// src/families/).
class TorchLayers {
 public:
  virtual ~TorchLayers() = default;
  const ModelConfig& config() const { return config_; }
  // Block k (0..blocks-1) on the active rows' state h: [rows, ...] -> [rows, ...], where the input
  // x is the state before block 0 (mlp: relu(backbone.k(h)); transformer: encoder layer k).
  virtual at::Tensor block(int k, const at::Tensor& h) const = 0;
  // Head k on the state after block k: logits [rows, num_classes] of exit k+1 for k < blocks, of
  // the final head for k == blocks (which reads the state after the last block).
  virtual at::Tensor head(int k, const at::Tensor& h) const = 0;
  // The exit rule's score of each row from a head's logits: [rows, num_classes] -> [rows]. The
  // largest softmax probability (docs/design.md §1), unless the model says otherwise (a model
  // file's confidence()).
  virtual at::Tensor confidence(const at::Tensor& logits) const;
  // The exit test on a head's logits: bool [rows], where confidence() fires (math::exit_fires).
  // threshold: a float, or a 0-d tensor on the logits' device (what a captured graph reads).
  template <typename Threshold>
  at::Tensor exit_test(const at::Tensor& logits, const Threshold& threshold) const {
    return math::exit_fires(confidence(logits), threshold);
  }

 protected:
  explicit TorchLayers(const ModelConfig& config) : config_(config) {}

 private:
  ModelConfig config_;
};

// A model of any family as a LibTorch module whose parameters are registered under exactly the
// names of the PyTorch module it mirrors (nested modules per dotted name), so a state_dict saved
// from that module loads unchanged and named_parameters() gives the same keys.
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
  StateDict state_dict() const;  // parameters in spec order, on the CPU

  FlatParameters flat_parameters() const;
  // The mlp in the native engine's layout; throws condbench::Error for another family.
  NativeModel native() const;
  // The blocks and heads on `device`, their parameters copied there.
  std::shared_ptr<const TorchLayers> layers(const at::Device& device) const;

  // The exit rule's score at every exit head for every row, running the full depth: [rows, blocks],
  // on x's device (computed on the device the family runs on).
  at::Tensor exit_confidences(const at::Tensor& x) const;

 private:
  void build();
  void assign(const FlatParameters& params);

  ModelConfig config_;
  std::vector<at::Tensor> parameters_;  // in parameter_specs order, registered under their names
};
TORCH_MODULE(EarlyExitModel);

// A state_dict's keys and shapes, as a family reads its sizes from them (StateDictContract::read_sizes).
// Every error names the key and, where one fits, how to fix the file.
class StateDictShapes {
 public:
  explicit StateDictShapes(const StateDict& state_dict);
  bool has(const std::string& key) const { return shapes_.count(key) > 0; }
  // The shape of `key`, which must have `dims` dimensions.
  const std::vector<int64_t>& require(const std::string& key, int64_t dims) const;
  // Blocks 0, 1, ... while `prefix N suffix` is a key; a later block's key after a gap names the gap.
  int count(const std::string& prefix, const std::string& suffix) const;

 private:
  const StateDict& state_dict_;
  std::map<std::string, std::vector<int64_t>> shapes_;
};

// Reads the config a state_dict describes: the family whose block_prefix() its keys hold, then the
// family's sizes from the shapes. The sizes a state_dict
// cannot give (from_weights false: a transformer's heads and tokens per row) come from `given`,
// else their fallback. Throws condbench::Error naming a key when it cannot.
// The dtype of `config`'s input rows: float32, or int64 for a family whose input is token ids.
at::ScalarType input_dtype(const ModelConfig& config);
// `rows` input rows for `config`: N(0, 1) floats from `seed` (seeded_inputs), or for an integer input
// the model's own example rows (ModelFamily::example_rows; the seed does not apply). CPU, contiguous.
at::Tensor input_rows(const ModelConfig& config, int64_t rows, uint64_t seed);

ModelConfig infer_config(const StateDict& state_dict, const std::map<std::string, int>& given = {});
// "; every key starts with 'module.' ..." when a known mistake fits the keys, else "".
std::string key_hint(const StateDict& state_dict);

// Throws condbench::Error naming the first missing, unexpected, non-float or wrongly shaped key of
// `state_dict` for a model of `config`. Reads no tensor data, so it also checks meta tensors.
void check_state_dict(const ModelConfig& config, const StateDict& state_dict);
// The same against `specs`, whatever model they are of (a family's, the decoder's).
void check_parameters(const std::vector<ParameterSpec>& specs, const StateDict& state_dict);
// "[2, 3]": a shape as the errors print it.
std::string shape_text(at::IntArrayRef shape);

}  // namespace condbench
