#pragma once
// What the aoti engine's strategies share: the model's forward deployed as PyTorch deploys it to
// C++ — torch.export, then AOTInductor (torch._inductor.aoti_compile_and_package) — and run with
// torch::inductor::AOTIModelPackageLoader. python/condbench/aoti.py compiles the packages,
// one per configuration, device and module ("cond": the peer's nested torch.cond; "masked": its
// torch.where masking), into a cache keyed by torch version:
//
//   <cache>/torch-<version>/<device>/i<in>-h<hidden>-c<classes>-b<blocks>/<module>.pt2 (+ .json)
//
// where <cache> is $CONDBENCH_AOTI_DIR, else $XDG_CACHE_HOME/condbench/aoti, else
// ~/.cache/condbench/aoti. A package's weights are placeholders: prepare() loads the model's own
// (load_constants), so one package serves any weights of its configuration. The decoder's packages
// (decoder-<sizes>/<module>.pt2) are one decode step each, the cache an explicit input and output
// (DecodeStep in python/condbench/deployed.py; strategies/decoder/aoti/).
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unordered_map>

#include "condbench/decoder/strategy.h"
#include "condbench/strategy.h"
#include "torch/torch_strategy.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace condbench::aoti {

// The package of `module` for `config` on `device`, and its description.
std::string package_path(const ModelConfig& config, Device device, const std::string& module);
std::string package_path(const DecoderConfig& config, Device device, const std::string& module);

// Why the package cannot be used (absent, made by another torch, unreadable description), with
// the command that makes it; nullopt when it can.
Unsupported package_unusable(const ModelConfig& config, Device device, const std::string& module);

// "compiled in 22.2 s (export 5.7 s) by torch 2.15.0; AOTInductor options: default but ...", for the
// result file's context; nullopt when the package is unusable.
std::optional<std::string> package_description(const ModelConfig& config, Device device, const std::string& module);

// The same for a decoder's step package.
Unsupported package_unusable(const DecoderConfig& config, Device device, const std::string& module);

// How many AOTInductor loaders the process has made: one per package used, however often its
// strategies are made again (a loader is lent again; tests hold the keeper to it).
size_t loaders_made();

// A loaded package running the model's weights.
class Package {
 public:
  Package(const EarlyExitModel& model, Device device, const std::string& module);
  Package(const DecoderModel& model, Device device, const std::string& module);
  ~Package();
  Package(const Package&) = delete;
  Package& operator=(const Package&) = delete;

  // The compiled forward: (exit id int32 [rows], logits [rows, C]) for inputs on the package's
  // device; `stream` is the CUDA stream to run on (nullptr on the CPU).
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs, void* stream) const;

 private:
  // Loads the package at `path`; `weights` (state_dict names), where given, replace its
  // placeholders, every one of them (a model file's package has its module's compiled in).
  void load(const std::string& path, Device device, const std::string& module,
            const std::unordered_map<std::string, at::Tensor>& weights);

  // Lent for this Package's life by a process-wide keeper (aoti_package.cpp, lend_loader).
  std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

// Thresholds as the compiled forward takes them, a float tensor [blocks] on the device, rewritten
// only when they change (a scenario keeps its thresholds: the timed loop writes nothing).
class ThresholdTensor {
 public:
  void prepare(int blocks, Device device);
  const at::Tensor& of(const std::vector<float>& thresholds);

 private:
  std::vector<float> last_;
  at::Tensor tensor_;
};

// An aoti strategy: the package of `module` loaded in prepare(), run in do_run(). Its launches are
// the ATen operators the compiled code calls (extern kernels such as addmm); the kernels
// AOTInductor generated are its own code and are not counted.
class AotiStrategy : public TorchStrategy {
 public:
  AotiStrategy(Device device, const char* module) : TorchStrategy(device), module_(module) {}
  void prepare(const EarlyExitModel& model, int64_t batch) override;

 protected:
  // The compiled forward on `input`: the result ready on the strategy's stream.
  ExitOutput run_package(const at::Tensor& input, const std::vector<float>& thresholds);
  const ModelConfig& config() const { return config_; }

 private:
  const char* module_;
  ModelConfig config_;
  std::unique_ptr<Package> package_;
  ThresholdTensor thresholds_;
  std::vector<at::Tensor> inputs_;  // (input, thresholds), reused: no allocation per inference
};

}  // namespace condbench::aoti
