// The mlp family (docs/design.md §1, docs/models.md): the question's early-exit MLP.
//
//   block k = relu(backbone.k(h))      backbone.0: in_features -> hidden, the others hidden -> hidden
//   head k  = exit{k+1}(h)             hidden -> num_classes; the final head is `final`
#include <ATen/ATen.h>

#include <cstdio>
#include <set>

#include "condbench/family.h"
#include "condbench/model.h"

namespace condbench {
namespace {

class MlpLayers final : public TorchLayers {
 public:
  // Specs: backbone.{i}.{weight,bias}, then exit{k}.{weight,bias}, then final.{weight,bias}.
  MlpLayers(const ModelConfig& config, std::vector<at::Tensor> params)
      : TorchLayers(config), params_(std::move(params)) {}

  at::Tensor block(int k, const at::Tensor& h) const override {
    return at::relu(at::linear(h, params_[2 * k], params_[2 * k + 1]));
  }
  at::Tensor head(int k, const at::Tensor& h) const override {
    const size_t at = 2 * (config().blocks + k);
    return at::linear(h, params_[at], params_[at + 1]);
  }

 private:
  std::vector<at::Tensor> params_;
};

class Mlp final : public ModelFamily, public StateDictContract {
 public:
  Mlp()
      : ModelFamily("mlp", "the question's MLP: Linear + ReLU blocks, a Linear exit head after each",
                    {{.key = "in_features", .help = "input width", .fallback = 32, .in_name = false},
                     {.key = "hidden",
                      .help = "hidden width",
                      .fallback = 64,
                      .runs = {64, 1024},
                      .full_runs = {64, 256, 1024, 4096}}},
                    /*named_in_results=*/false) {}

  const StateDictContract* state_dict() const override { return this; }
  int default_blocks() const override { return 3; }
  std::vector<int> runs_blocks(bool full) const override { return full ? std::vector{3, 12} : std::vector{3}; }
  std::vector<int64_t> runs_batches(bool full) const override {
    return full ? std::vector<int64_t>{1, 8, 64, 512} : std::vector<int64_t>{1, 64};
  }

  std::vector<int64_t> row_shape(const ModelConfig& c) const override { return {c.size("in_features")}; }
  int width(const ModelConfig& c) const override { return c.size("hidden"); }
  // The input rows (the pool's batch and its copy on the device), a few hidden activations live at
  // once (a block's output, its ReLU, the masked strategies' kept state), every exit's logits
  // (masked computes them all; one kept, one being picked).
  std::vector<MemoryTerm> memory_terms(const ModelConfig& /*config*/) const override {
    return {{"the input rows", {"rows", "in_features"}, 2},
            {"the activations", {"rows", "hidden"}, 4},
            {"every exit's logits", {"rows", "num_classes", "blocks"}, 3}};
  }

  std::vector<ParameterSpec> parameters(const ModelConfig& c) const override {
    const int in = c.size("in_features"), hidden = c.size("hidden");
    std::vector<ParameterSpec> specs;
    for (int i = 0; i < c.blocks; ++i) add_linear(specs, "backbone." + std::to_string(i), i == 0 ? in : hidden, hidden);
    for (int k = 1; k <= c.blocks; ++k) add_linear(specs, "exit" + std::to_string(k), hidden, c.num_classes);
    add_linear(specs, "final", hidden, c.num_classes);
    return specs;
  }

  std::string block_prefix() const override { return "backbone."; }
  void read_sizes(const StateDictShapes& state_dict, ModelConfig& c) const override {
    const std::vector<int64_t>& first = state_dict.require("backbone.0.weight", 2);
    c.set("hidden", static_cast<int>(first[0])).set("in_features", static_cast<int>(first[1]));
    c.num_classes = static_cast<int>(state_dict.require("final.weight", 2)[0]);
    c.blocks = state_dict.count("backbone.", ".weight");
  }
  // Backbone Linears numbered with gaps: an nn.Sequential with activations between them.
  std::string weights_hint(const std::vector<std::string>& keys) const override {
    std::set<int> numbers;
    for (const std::string& k : keys) {
      int n = 0;
      char tail[8] = {};
      if (std::sscanf(k.c_str(), "backbone.%d.%7s", &n, tail) == 2 && std::string(tail) == "weight") numbers.insert(n);
    }
    if (numbers.empty() || *numbers.rbegin() == static_cast<int>(numbers.size()) - 1) return "";
    std::string listed;
    for (const int n : numbers) listed += (listed.empty() ? "" : ", ") + std::to_string(n);
    return "; the backbone Linears are numbered " + listed +
           " (an nn.Sequential with activations between them?): condbench expects backbone.0, backbone.1, ... "
           "in order; renumber them before saving";
  }

  double block_flops(const ModelConfig& c, int block) const override {
    return 2.0 * (block == 0 ? c.size("in_features") : c.size("hidden")) * c.size("hidden");
  }
  double head_flops(const ModelConfig& c, int /*head*/) const override {
    return 2.0 * c.size("hidden") * c.num_classes;
  }
  // 2 FLOPs and 4 bytes per weight, and the bias
  double block_bytes(const ModelConfig& c, int block) const override {
    return 2.0 * block_flops(c, block) + 4.0 * c.size("hidden");
  }
  double head_bytes(const ModelConfig& c, int head) const override {
    return 2.0 * head_flops(c, head) + 4.0 * c.num_classes;
  }

  std::shared_ptr<const TorchLayers> layers(const ModelConfig& c, std::vector<at::Tensor> params,
                                            const at::Device& /*device*/) const override {
    return std::make_shared<MlpLayers>(c, std::move(params));
  }
};

CONDBENCH_REGISTER_FAMILY(Mlp);

}  // namespace

}  // namespace condbench
