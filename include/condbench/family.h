#pragma once
// A model family, described once (docs/design.md §1, docs/contributing.md "Adding a model
// family"): its name, its axes, how its sizes relate, what it times, its parameters (the state_dict
// contract, of either unit) and — for a family timed per inference — what a block and a head cost,
// and its LibTorch forward. Everything else — the runner's flags and sweeps, benchmark names, model
// descriptions, the workload the peer reads, the AOTInductor packages, condbench-infer and the
// reading of a state_dict — loops over these descriptors instead of naming a family.
//
// A Family is what every family is, whatever its timed unit: its name, its sizes (FamilyAxis rows),
// their relations and its batches. A ModelFamily, timed per inference, adds the inference's members;
// the decoder (condbench/decoder/config.h), timed per generated token, is a Family of the other unit.
// A ModelFamily is one file, src/families/<name>.cpp, that registers it in one line,
// CONDBENCH_REGISTER_FAMILY(Type), as a strategy does (its Python twin, for the peer and the
// AOTInductor packages, is a class in python/condbench/families.py). This header is torch-free: the
// native engine and the CUDA kernels read a ModelConfig without LibTorch; only layers() needs it,
// and only its definitions include it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "condbench/config.h"
#include "condbench/memory_budget.h"
#include "condbench/parameters.h"
#include "condbench/result_format.h"  // TimedUnit
#include "condbench/size_relation.h"

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
class Strategy;         // condbench/strategy.h

// One size of a family's models: a ModelConfig entry, a benchmark-name axis, a key of the config
// the peer and the AOTInductor packages read, and a runner flag (--key, '_' written '-').
struct FamilyAxis {
  std::string key;                  // "hidden", "d_model", ...
  std::string help;                 // "hidden width", for --help
  int fallback = 1;                 // the size when nothing says otherwise
  int max = 1 << 16;                // the accepted range is 1..max: a typo must not allocate tens of gigabytes
  std::vector<int> runs = {};       // what the runner sweeps without the flag; empty: {fallback}
  std::vector<int> full_runs = {};  // ... with --full; empty: runs
  // Without its flag: scale x another axis (a transformer's ffn, 4 x d_model), whatever `runs` says.
  std::string scales_with = {};
  int scale = 0;
  int input_dim = -1;        // the dimension of an input row that holds it (a transformer's seq: 0), or -1
  bool from_weights = true;  // a state_dict's shapes give it; otherwise its flag does, with --weights too
  bool in_name = true;       // part of benchmark names (the mlp's in_features never was)
  // What a sequence is rather than the model (a decoder's prompt and generate): no part of the name
  // of its compiled step.
  bool per_sequence = false;

  std::string flag() const;  // "--d-model"
};

// The state_dict contract of a family whose weights a state_dict holds (docs/models.md): what
// condbench seeds, saves, and reads from --weights. Built-in families are one, of either unit: its
// keys, whatever the config (StateDictKeys), then its parameters and sizes on the family's config
// (StateDictContractOf: a ModelFamily's ModelConfig, the decoder's DecoderConfig).
class StateDictKeys {
 public:
  virtual ~StateDictKeys() = default;
  // What every block's keys start with ("backbone.", "layers."): a state_dict holding such a key
  // holds this family's model.
  virtual std::string block_prefix() const = 0;
  // A key that only this family's state_dicts hold ("embed.weight"), which tells its file from
  // another family's of the same block prefix; "" where the block prefix is enough.
  virtual std::string own_key() const { return ""; }
  // How to fix a state_dict of this family that is almost right, from its keys: "" when no known
  // mistake fits, else "; ..." to append to the error.
  virtual std::string weights_hint(const std::vector<std::string>& /*keys*/) const { return ""; }

 protected:
  StateDictKeys() = default;
  StateDictKeys(const StateDictKeys&) = default;
  StateDictKeys& operator=(const StateDictKeys&) = default;
};

template <typename Config>
class StateDictContractOf : public StateDictKeys {
 public:
  // Every parameter in state_dict order, with its seeded initialisation.
  virtual std::vector<ParameterSpec> parameters(const Config& config) const = 0;
  // The model's sizes from a state_dict's shapes: every axis with from_weights (and a ModelConfig's
  // num_classes and blocks). Throws condbench::Error naming a key.
  virtual void read_sizes(const StateDictShapes& state_dict, Config& config) const = 0;
};
using StateDictContract = StateDictContractOf<ModelConfig>;

// A whole-model AOTInductor package a family compiled itself (a model file's cond.pt2, masked.pt2),
// or why it has none. Where the default compile disagreed with the module and a workaround's did not
// (Inductor's torch.cond on channels_last buffers, docs/upstream-cond-layout.md): the options it was
// compiled with and why the default was refused.
struct WholeModelPackage {
  std::string path;
  std::string unavailable;      // why there is none (export or compile failed); "" when path is set
  std::string description;      // how it was made, for the result's context
  std::string workaround;       // "layout_optimization=False", or "" for the default options
  std::string default_refused;  // "the compiled cond module differs from the module on example_input row 4"
};

class ModelFamily;

// What every family is, whatever it times: its name, its sizes, how they relate, and its batches.
class Family {
 public:
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }  // one line, for --help and docs
  const std::vector<FamilyAxis>& axes() const { return axes_; }
  const FamilyAxis* axis(std::string_view key) const;  // nullptr when this family has no such axis
  // The mlp's benchmark names predate families and never said `model:`; every other family's do.
  bool named_in_results() const { return named_in_results_; }
  // One timed iteration: an inference of a batch (a ModelFamily), or one generated token of a batch
  // of sequences (the decoder).
  TimedUnit unit() const { return unit_; }
  // This family's inference members, or nullptr for a family timed per token.
  virtual const ModelFamily* per_inference() const { return nullptr; }
  // Its state_dict's keys (the contract, whatever its config), or nullptr for a family whose weights
  // are inside its own code (a model file's packages).
  virtual const StateDictKeys* state_dict_keys() const = 0;

  // How its sizes must relate (each axis's range is checked already): check_sizes checks them, and
  // rules.json gives them to condbench.aoti's --config.
  virtual std::vector<SizeRelation> relations() const { return {}; }
  // What every config's validate() checks first, of either unit: each size of `config` in its
  // axis's range (1..max), then the relations. Throws condbench::Error naming the size.
  template <typename Config>
  void check_sizes(const Config& config) const {
    for (const FamilyAxis& axis : axes_) check_size(axis, config.size(axis.key));
    for (const SizeRelation& r : relations()) r.require(config.size(r.size), config.size(r.other));
  }
  static void check_size(const FamilyAxis& axis, int value);

  // What a config of either unit is called, from these axes alone (one grammar for both units):
  // its folder tag's stem, the family's name and each axis's key and size ("decoder-vocab512-
  // d_model256-..."; with_sequence false: without the per-sequence axes, a decoder step's name), and
  // its benchmark-name axes: model:NAME where named_in_results, each axis in the name, then blocks:
  // `blocks`, the exits before the final one.
  template <typename Config>
  std::string tag_stem(const Config& config, bool with_sequence = true) const {
    std::string tag = name_;
    for (const FamilyAxis& axis : axes_)
      if (with_sequence || !axis.per_sequence)
        tag.append("-").append(axis.key).append(std::to_string(config.size(axis.key)));
    return tag;
  }
  // Its sizes as words, "vocab=512 d_model=256 ...": a description's part that the axes give.
  template <typename Config>
  std::string sizes_text(const Config& config) const {
    std::string text;
    for (const FamilyAxis& axis : axes_)
      text.append(text.empty() ? "" : " ").append(axis.key).append("=").append(std::to_string(config.size(axis.key)));
    return text;
  }
  template <typename Config>
  std::vector<std::pair<std::string, std::string>> name_axes(const Config& config, int blocks) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (named_in_results_) out.emplace_back("model", name_);
    for (const FamilyAxis& axis : axes_)
      if (axis.in_name) out.emplace_back(axis.key, std::to_string(config.size(axis.key)));
    out.emplace_back("blocks", std::to_string(blocks));
    return out;
  }
  // The batches the runner runs without --batch, and with --full.
  virtual std::vector<int64_t> runs_batches(bool full) const = 0;

  // A built-in model as rules.json states it to condbench.aoti: its sizes in the order of its tag
  // (each axis but a sequence's, then a ModelFamily's num_classes and blocks), and the tag, the
  // name of its aoti packages' folder.
  struct TaggedModel {
    std::vector<std::pair<std::string, int>> sizes;
    std::string tag;
  };
  // The family's default model, then those --full adds.
  virtual std::vector<TaggedModel> tagged_models() const = 0;
  // What a batch of its default model holds beside its weights (rules.json's memory terms).
  virtual std::vector<MemoryTerm> default_memory_terms() const = 0;

 protected:
  Family(std::string name, std::string summary, std::vector<FamilyAxis> axes, TimedUnit unit,
         bool named_in_results = true)
      : name_(std::move(name)),
        summary_(std::move(summary)),
        axes_(std::move(axes)),
        unit_(unit),
        named_in_results_(named_in_results) {}
  // For a family whose name is read at run time (a model file's, from its manifest).
  void set_name(std::string name) { name_ = std::move(name); }
  // A model as tagged_models() states it, of either unit: each axis's size but a sequence's, then
  // `more` (a ModelConfig's num_classes and blocks), and its `tag`.
  template <typename Config>
  TaggedModel tagged(const Config& config, std::string tag, std::vector<std::pair<std::string, int>> more = {}) const {
    TaggedModel m{{}, std::move(tag)};
    for (const FamilyAxis& axis : axes_)
      if (!axis.per_sequence) m.sizes.emplace_back(axis.key, config.size(axis.key));
    m.sizes.insert(m.sizes.end(), more.begin(), more.end());
    return m;
  }

 private:
  std::string name_, summary_;
  std::vector<FamilyAxis> axes_;
  TimedUnit unit_;
  bool named_in_results_;
};

// A family timed per inference: what a batch's early-exit forward is made of.
class ModelFamily : public Family {
 public:
  const ModelFamily* per_inference() const final { return this; }

  // The family's default model: every axis at its fallback, default_blocks() deep, default_classes().
  ModelConfig config() const;
  virtual int default_blocks() const = 0;
  virtual int default_classes() const { return 10; }
  // The depths the runner runs without --blocks, and with --full.
  virtual std::vector<int> runs_blocks(bool full) const = 0;
  // Models --full adds beyond the sweep of the axes (the transformer: BERT-base's encoder).
  virtual std::vector<ModelConfig> full_extras() const { return {}; }

  std::vector<TaggedModel> tagged_models() const final;
  std::vector<MemoryTerm> default_memory_terms() const final { return memory_terms(config()); }

  // One input row's shape ([rows, row...] is an input) and the width the exit heads read.
  virtual std::vector<int64_t> row_shape(const ModelConfig& config) const = 0;
  // The row shape of each tensor the model takes, in the order they pack into row_shape (each one's
  // values one after another): one, row_shape itself, but for a model file of several inputs.
  virtual std::vector<std::vector<int64_t>> input_shapes(const ModelConfig& config) const {
    return {row_shape(config)};
  }
  // What an input row holds: float32 values condbench draws N(0, 1) (every built-in family), or int64
  // token ids and masks (a model file whose example_input() gives integers), whose rows the model
  // gives: example_rows sets `out` to `rows` of its own rows, repeated as needed (the base throws: a
  // float input has none; defined in config.cpp, torch-free, so this class's vtable is there).
  // check_input_values throws condbench::Error, one line naming `whose` row and position, for a value
  // outside its input's range (an id an embedding's table does not hold).
  virtual bool integer_input() const { return false; }
  virtual void example_rows(int64_t rows, at::Tensor& out) const;
  virtual void check_input_values(const at::Tensor& /*rows*/, const std::string& /*whose*/) const {}
  virtual int width(const ModelConfig& config) const = 0;
  // Any other check across axes; throws condbench::Error.
  virtual void check(const ModelConfig& /*config*/) const {}
  // What a batch of this family's model holds at once beside its weights (its input rows,
  // activations, every exit's logits), as named products of "rows", the axes, "num_classes" and
  // "blocks" (memory_budget.h): the memory budget's part of a batch. rules.json gives the built-in
  // families' to Python.
  virtual std::vector<MemoryTerm> memory_terms(const ModelConfig& config) const = 0;

  // The state_dict contract (docs/models.md), or nullptr for a family whose weights are inside its
  // own code (a model file's packages): nothing condbench seeds, saves or reads from --weights.
  virtual const StateDictContract* state_dict() const = 0;
  const StateDictKeys* state_dict_keys() const final { return state_dict(); }

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

  // What the harness asks of a family whose model is the user's code (a model file) rather than a
  // descriptor condbench wrote; a built-in family answers each with its default.
  //
  // Checks `strategy`, prepared for `batch` rows, against the model's own forward before it is
  // first timed or its output reported: throws condbench::Error naming the first row that differs.
  // A built-in family has nothing to check here (the tests check every strategy against the
  // reference).
  virtual void check_before_use(Strategy& /*strategy*/, const std::vector<float>& /*thresholds*/,
                                int64_t /*batch*/) const {}
  // What the run's context records of where the model came from, as (key, value) pairs:
  // {"model_file", "cnn.py, digest 1a2b..., compiled for the CPU by torch 2.15.0"}. None for a
  // built-in family, whose benchmark names say everything.
  virtual std::vector<std::pair<std::string, std::string>> provenance() const { return {}; }
  // The folder the Python peer loads the module from (a model file's compiled folder), or "" when
  // the peer builds the model from the exported config and weights (its Python twin).
  virtual std::string module_folder() const { return ""; }
  // The aoti engine's whole-model package of `module` ("cond", "masked") when the family compiled
  // its own, or nullopt when condbench.aoti compiles it from the family's Python twin and a state_dict.
  virtual std::optional<WholeModelPackage> whole_model(const std::string& /*module*/) const { return std::nullopt; }
  // Whether a CUDA graph capture may refuse the model's code, which is then a strategy that cannot
  // run it (skipped with the reason) rather than an error: true for code condbench did not write.
  virtual bool capture_may_refuse() const { return false; }

 protected:
  ModelFamily(std::string name, std::string summary, std::vector<FamilyAxis> axes, bool named_in_results = true)
      : Family(std::move(name), std::move(summary), std::move(axes), TimedUnit::inference, named_in_results) {}
};

// The registry (src/family_registry.cpp): every family timed per inference linked in (the
// condbench_families object library), sorted by name.
const std::vector<const ModelFamily*>& model_families();
// Every family: model_families(), then the decoder (built in: condbench/decoder/config.h), which
// --model, the size flags, --help and rules.json treat as one.
const std::vector<const Family*>& families();
// The family named `name`, of either unit; throws condbench::Error listing the known ones.
const Family& family(std::string_view name);
// The family timed per inference named `name`; throws condbench::Error as family() does.
const ModelFamily& model_family(std::string_view name);
// model_family(name).config(): the family's default model.
ModelConfig model_config(std::string_view family);
// "mlp, transformer, decoder"
std::string family_names();
// "decoder": every family timed per generated token, comma-separated (kPerTokenContext's value).
std::string per_token_family_names();
// What CONDBENCH_REGISTER_FAMILY calls during static initialisation; aborts on a second family of a name.
bool register_family(std::unique_ptr<const ModelFamily> family);

#define CONDBENCH_REGISTER_FAMILY(Type) \
  static const bool condbench_family_registered_##Type = ::condbench::register_family(std::make_unique<Type>())

}  // namespace condbench
