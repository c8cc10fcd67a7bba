#pragma once
// A model family, described once (docs/design.md §1, docs/contributing.md "Adding a model
// family"): its name, its axes, its parameters (the state_dict contract), what a block and a head
// cost, and its LibTorch forward. Everything else — the runner's flags and sweeps, benchmark
// names, model descriptions, the workload the peer reads, the AOTInductor packages, condbench-infer
// and the reading of a state_dict — loops over these descriptors instead of naming a family.
//
// A family is one file, src/families/<name>.cpp, that defines a ModelFamily and registers it in one
// line, CONDBENCH_REGISTER_FAMILY(Type), as a strategy does (its Python twin, for the peer and the
// AOTInductor packages, is a class in python/condbench/early_exit.py). This header is torch-free: the
// native engine and the CUDA kernels read a ModelConfig without LibTorch; only layers() needs it,
// and only its definitions include it.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "condbench/config.h"
#include "condbench/parameters.h"

namespace c10 {
struct Device;
}
namespace at {
class Tensor;
using c10::Device;
}  // namespace at

namespace condbench {

class TorchLayers;      // condbench/model.h
class StateDictShapes;  // condbench/model.h
class ModelFileFamily;  // condbench/model_file.h

// One size of a family's models: a ModelConfig entry, a benchmark-name axis, a key of the config
// the peer and the AOTInductor packages read, and a runner flag (--key, '_' written '-').
struct FamilyAxis {
  std::string key;                  // "hidden", "d_model", ...
  std::string help;                 // "hidden width", for --help
  int fallback = 1;                 // the size when nothing says otherwise
  int max = 1 << 16;                // the accepted range is 1..max: a typo must not allocate tens of gigabytes
  std::vector<int> runs = {};       // what the runner sweeps without the flag; empty: {fallback}
  std::vector<int> full_runs = {};  // ... with --full; empty: runs
  // When neither the flag nor `runs` says: scale x another axis (a transformer's ffn, 4 x d_model).
  std::string scales_with = {};
  int scale = 0;
  int input_dim = -1;        // the dimension of an input row that holds it (a transformer's seq: 0), or -1
  bool from_weights = true;  // a state_dict's shapes give it; otherwise its flag does, with --weights too
  bool in_name = true;       // part of benchmark names (the mlp's in_features never was)

  std::string flag() const;  // "--d-model"
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  ModelFamily(const ModelFamily&) = delete;
  ModelFamily& operator=(const ModelFamily&) = delete;

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }  // one line, for --help and docs
  const std::vector<FamilyAxis>& axes() const { return axes_; }
  const FamilyAxis* axis(std::string_view key) const;  // nullptr when this family has no such axis
  // The mlp's benchmark names predate families and never said `model:`; every other family's do.
  bool named_in_results() const { return named_in_results_; }

  // The family's default model: every axis at its fallback, default_blocks() deep, default_classes().
  ModelConfig config() const;
  virtual int default_blocks() const = 0;
  virtual int default_classes() const { return 10; }
  // What the runner runs without flags (blocks and batches), and with --full.
  virtual std::vector<int> runs_blocks(bool full) const = 0;
  virtual std::vector<int64_t> runs_batches(bool full) const = 0;
  // Models --full adds beyond the sweep of the axes (the transformer: BERT-base's encoder).
  virtual std::vector<ModelConfig> full_extras() const { return {}; }

  // One input row's shape ([rows, row...] is an input) and the width the exit heads read.
  virtual std::vector<int64_t> row_shape(const ModelConfig& config) const = 0;
  virtual int width(const ModelConfig& config) const = 0;
  // Checks across axes (each axis's range is checked already); throws condbench::Error.
  virtual void check(const ModelConfig& /*config*/) const {}

  // The state_dict contract: every parameter in state_dict order, with its seeded initialisation.
  virtual std::vector<ParameterSpec> parameters(const ModelConfig& config) const = 0;
  // What every block's keys start with ("backbone.", "layers."): a state_dict holding such a key
  // holds this family's model.
  virtual std::string block_prefix() const = 0;
  // The model's sizes from a state_dict's shapes: every axis with from_weights, num_classes and
  // blocks. Throws condbench::Error naming a key.
  virtual void read_sizes(const StateDictShapes& state_dict, ModelConfig& config) const = 0;
  // How to fix a state_dict of this family that is almost right, from its keys: "" when no known
  // mistake fits, else "; ..." to append to the error.
  virtual std::string weights_hint(const std::vector<std::string>& /*keys*/) const { return ""; }

  // Per row (docs/measured.md): FLOPs of block `block` and of one head; bytes of their parameters.
  virtual double block_flops(const ModelConfig& config, int block) const = 0;
  virtual double head_flops(const ModelConfig& config, int head) const = 0;
  virtual double block_bytes(const ModelConfig& config, int block) const = 0;
  virtual double head_bytes(const ModelConfig& config, int head) const = 0;

  // The blocks and heads as LibTorch calls on `device`, on `params` (parameters() order, there).
  virtual std::shared_ptr<const TorchLayers> layers(const ModelConfig& config, std::vector<at::Tensor> params,
                                                    const at::Device& device) const = 0;

  // Why this family's models cannot run on `device` ("cpu", "cuda") at all, whatever the strategy:
  // "" when they can. Strategies add their own limits (Strategy::supports).
  virtual std::string unsupported_on(std::string_view /*device*/) const { return ""; }
  // The model file this family is (condbench/model_file.h), or nullptr for a built-in family.
  virtual const ModelFileFamily* model_file() const { return nullptr; }

 protected:
  ModelFamily(std::string name, std::string summary, std::vector<FamilyAxis> axes, bool named_in_results = true)
      : name_(std::move(name)),
        summary_(std::move(summary)),
        axes_(std::move(axes)),
        named_in_results_(named_in_results) {}
  // For a family whose name is read at run time (a model file's, from its manifest).
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_, summary_;
  std::vector<FamilyAxis> axes_;
  bool named_in_results_;
};

// The registry (src/family_registry.cpp): every family linked in (the condbench_families object
// library), sorted by name.
const std::vector<const ModelFamily*>& model_families();
// The family named `name`; throws condbench::Error listing the known ones.
const ModelFamily& model_family(std::string_view name);
// model_family(name).config(): the family's default model.
ModelConfig model_config(std::string_view family);
// "mlp, transformer"
std::string family_names();
// What CONDBENCH_REGISTER_FAMILY calls during static initialisation; aborts on a second family of a name.
bool register_family(std::unique_ptr<const ModelFamily> family);

#define CONDBENCH_REGISTER_FAMILY(Type) \
  static const bool condbench_family_registered_##Type = ::condbench::register_family(std::make_unique<Type>())

}  // namespace condbench
