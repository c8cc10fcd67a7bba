// The aoti engine's packages: see aoti_package.h.
#include "aoti/aoti_package.h"

#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "condbench/aoti_loader.h"
#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/torch_device.h"

namespace condbench::aoti {

namespace fs = std::filesystem;

namespace {

// The packages' parameters are the model's state_dict names under the exported module's "model.".
constexpr const char* kParameterPrefix = "model.";

fs::path cache_root() {
  if (const char* dir = std::getenv("CONDBENCH_AOTI_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "condbench" / "aoti";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".cache" / "condbench" / "aoti";
}

// What a built-in model's package is checked against: its file in the cache, the family and the
// sizes python/condbench/aoti.py writes into its description (every axis of the family, then
// num_classes and blocks; a decoder's sizes), and the command that makes it.
struct Cached {
  fs::path package;
  std::string family;
  std::vector<std::pair<std::string, int64_t>> sizes;
  std::string described;  // the model, as condbench's messages describe it

  fs::path description() const { return fs::path(package).replace_extension(".json"); }
  std::string make(Device device, const std::string& module) const {
    std::ostringstream command;  // (a stream: GCC 12 warns falsely on long chains of string +)
    command << "; scripts/run compiles it, or .venv/bin/python -m condbench.aoti --device=" << to_string(device)
            << " --modules=" << module << " --config=" << family << ":";
    const char* separator = "";
    for (const auto& [key, value] : sizes) {
      command << separator << key << "=" << value;
      separator = ",";
    }
    return command.str();
  }
};

fs::path package_file(const std::string& tag, Device device, const std::string& module) {
  return cache_root() / ("torch-" + std::string(TORCH_VERSION)) / to_string(device) / tag / (module + ".pt2");
}

Cached cached(const ModelConfig& c, Device device, const std::string& module) {
  Cached k{package_file(c.tag(), device, module), c.family->name(), {}, c.describe()};
  for (const FamilyAxis& axis : c.family->axes()) k.sizes.emplace_back(axis.key, c.size(axis.key));
  k.sizes.emplace_back("num_classes", c.num_classes);
  k.sizes.emplace_back("blocks", c.blocks);
  return k;
}

Cached cached(const DecoderConfig& c, Device device, const std::string& module) {
  Cached k{package_file(c.step_tag(), device, module), kDecoderFamily, {}, c.describe()};
  for (const FamilyAxis& axis : decoder_family().axes())
    if (!axis.per_sequence) k.sizes.emplace_back(axis.key, c.size(axis.key));
  return k;
}

// The package's description, read whole; a file from elsewhere can hold anything.
std::optional<nlohmann::json> read_description(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size > (1u << 16)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return std::nullopt;
  return meta;
}

std::string text_of(const nlohmann::json& meta, const char* key) {
  const auto it = meta.find(key);
  if (it == meta.end()) return "?";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) {
    std::ostringstream out;
    out << it->get<double>();
    return out.str();
  }
  return "?";
}

}  // namespace

namespace {

Unsupported unusable(const Cached& k, Device device, const std::string& module) {
  const fs::path description = k.description();
  const std::string make = k.make(device, module);
  std::error_code ec;
  if (!fs::is_regular_file(k.package, ec) || !fs::is_regular_file(description, ec))
    return "no AOTInductor package for this model at " + k.package.string() + make;
  const std::optional<nlohmann::json> meta = read_description(description);
  if (!meta) return "unreadable package description " + description.string() + make;
  // The description's config is the model's: its family (absent for the mlp) and every size.
  const auto given = meta->find("config");
  const auto family = [&] {  // absent: the mlp (packages made before the transformer said nothing)
    const std::string text = text_of(*given, "family");
    return text == "?" ? std::string("mlp") : text;
  };
  bool same = given != meta->end() && given->is_object() && family() == k.family;
  for (const auto& [key, value] : k.sizes)
    same = same && given->contains(key) && (*given)[key].is_number_integer() && (*given)[key].get<int64_t>() == value;
  if (!same)
    return "the package description " + description.string() + " is not of this model (" + k.described + ")" + make;
  if (text_of(*meta, "torch_version") != TORCH_VERSION)
    return "the package at " + k.package.string() + " was compiled by torch " + text_of(*meta, "torch_version") +
           ", this LibTorch is " + TORCH_VERSION + make;
  return std::nullopt;
}

std::string compiled_note(const Cached& k) {
  const std::optional<nlohmann::json> meta = read_description(k.description());
  if (!meta) return "?";
  return "compiled in " + text_of(*meta, "compile_s") + " s (export " + text_of(*meta, "export_s") + " s) by torch " +
         text_of(*meta, "torch_version") + "; AOTInductor options: " + text_of(*meta, "options");
}

}  // namespace

std::string package_path(const ModelConfig& config, Device device, const std::string& module) {
  return cached(config, device, module).package.string();
}

std::string package_path(const DecoderConfig& config, Device device, const std::string& module) {
  return cached(config, device, module).package.string();
}

Unsupported package_unusable(const ModelConfig& config, Device device, const std::string& module) {
  if (const std::optional<WholeModelPackage> own = config.family->whole_model(module)) {  // the family's, or why not
    if (own->path.empty()) return own->unavailable;
    return std::nullopt;
  }
  return unusable(cached(config, device, module), device, module);
}

Unsupported package_unusable(const DecoderConfig& config, Device device, const std::string& module) {
  return unusable(cached(config, device, module), device, module);
}

std::optional<std::string> package_description(const ModelConfig& config, Device device, const std::string& module) {
  if (package_unusable(config, device, module)) return std::nullopt;
  if (const std::optional<WholeModelPackage> own = config.family->whole_model(module)) return own->description;
  return compiled_note(cached(config, device, module));
}

Package::Package(const EarlyExitModel& model, Device device, const std::string& module) {
  const ModelConfig& config = model->config();
  if (const Unsupported why = package_unusable(config, device, module)) fail("aoti/" + module + ": " + *why);
  if (const std::optional<WholeModelPackage> own = config.family->whole_model(module)) {  // weights compiled in
    load(own->path, device, module, {});
    return;
  }
  std::unordered_map<std::string, at::Tensor> weights;
  for (const auto& [name, tensor] : model->state_dict()) weights.emplace(name, tensor);
  load(cached(config, device, module).package.string(), device, module, weights);
}

Package::Package(const DecoderModel& model, Device device, const std::string& module) {
  if (const Unsupported why = package_unusable(model.config, device, module)) fail("aoti/" + module + ": " + *why);
  std::unordered_map<std::string, at::Tensor> weights;
  const std::vector<ParameterSpec> specs = decoder_parameters(model.config);
  for (size_t i = 0; i < specs.size(); ++i)
    weights.emplace(specs[i].name,
                    at::from_blob(const_cast<float*>(model.params[i].data()), specs[i].shape, at::kFloat).clone());
  load(cached(model.config, device, module).package.string(), device, module, weights);
}

namespace {

std::atomic<size_t> made_loaders{0};

// The loaders kept, by device and package path; never destroyed as a static would be, after the
// runtimes it needs (a CUDA package's loader must not outlive the CUDA runtime at the process's exit:
// release_prepared_case's reason).
using KeptLoaders = std::map<std::pair<Device, std::string>, std::shared_ptr<torch::inductor::AOTIModelPackageLoader>>;
std::mutex kept_mutex;
KeptLoaders& kept_loaders() {
  static auto& kept = *new KeptLoaders();
  return kept;
}

// The loader of the package at `path` on `device`, kept for the process and lent to one Package at a
// time. AOTInductor's loader extracts a package into a folder of its own and loads its library on
// every load, and what a load holds is not all given back when it goes: about the package's weights
// each time (measured: 8.3 MB a load of the MLP at hidden 1024, whose weights are 8.5 MB). The
// runner makes a case again each time Google Benchmark calls it, interleaved, so a default run
// loaded its packages hundreds of times and grew to 15.8 GB (#59). A loader not lent now is lent
// again, the model's weights loaded over its constants anew; one asked for while it is lent (two
// strategies of one package at once) is made, and not kept.
std::shared_ptr<torch::inductor::AOTIModelPackageLoader> lend_loader(const std::string& path, Device device) {
  std::shared_ptr<torch::inductor::AOTIModelPackageLoader> made;
  {
    const std::lock_guard<std::mutex> lock(kept_mutex);
    std::shared_ptr<torch::inductor::AOTIModelPackageLoader>& slot = kept_loaders()[{device, path}];
    if (slot && slot.use_count() == 1) return slot;  // only the map holds it: free
    made = make_aoti_loader(path, /*device_index=*/device == Device::cuda ? 0 : -1);
    ++made_loaders;
    if (!slot) slot = made;
  }
  return made;
}

}  // namespace

size_t loaders_made() { return made_loaders; }

void Package::load(const std::string& path, Device device, const std::string& module,
                   const std::unordered_map<std::string, at::Tensor>& weights) {
  try {
    loader_ = lend_loader(path, device);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    fail("aoti/" + module + ": cannot load " + path + ": " + what.substr(0, what.find('\n')));
  }
  if (weights.empty()) return;
  // The model's weights replace the package's placeholders, every one of them.
  std::unordered_map<std::string, at::Tensor> constants;
  for (const auto& [name, tensor] : weights)
    constants.emplace(kParameterPrefix + name, tensor.to(torch_device(device)).contiguous());
  std::set<std::string> held;
  for (const std::string& fqn : loader_->get_constant_fqns()) held.insert(fqn);
  std::set<std::string> given;
  for (const auto& entry : constants) given.insert(entry.first);
  if (held != given)
    fail("aoti/" + module + ": the package at " + path + " holds " + std::to_string(held.size()) +
         " constants that are not the model's " + std::to_string(given.size()) + " parameters (" +
         (held.empty() ? std::string("none") : *held.begin()) +
         ", ...): its weights are folded or pre-packed (freezing, max_autotune), so it cannot take the model's; "
         "compile it with .venv/bin/python -m condbench.aoti --force");
  try {
    loader_->load_constants(constants, /*use_inactive=*/false, /*check_full_update=*/true);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    fail("aoti/" + module + ": cannot load the weights into " + path + ": " + what.substr(0, what.find('\n')));
  }
}

Package::~Package() = default;

std::vector<at::Tensor> Package::run(const std::vector<at::Tensor>& inputs, void* stream) const {
  return loader_->run(inputs, stream);
}

void ThresholdTensor::prepare(int blocks, Device device) {
  last_.assign(static_cast<size_t>(blocks), std::numeric_limits<float>::quiet_NaN());  // never equal: first run writes
  tensor_ = at::empty({blocks}, at::TensorOptions().device(torch_device(device)).dtype(at::kFloat));
}

const at::Tensor& ThresholdTensor::of(const std::vector<float>& thresholds) {
  if (thresholds != last_) {
    last_ = thresholds;
    tensor_.copy_(at::from_blob(last_.data(), {static_cast<int64_t>(last_.size())}, at::kFloat));
  }
  return tensor_;
}

void AotiStrategy::prepare(const EarlyExitModel& model, int64_t /*batch*/) {
  config_ = model->config();
  package_ = std::make_unique<Package>(model, device(), module_);
  thresholds_.prepare(config_.blocks, device());
  inputs_.assign(2, at::Tensor());
}

ExitOutput AotiStrategy::run_package(const at::Tensor& input, const std::vector<float>& thresholds) {
  inputs_[0] = input;
  inputs_[1] = thresholds_.of(thresholds);
  // LibTorch's current stream, as the torch engine runs on and finish() synchronises (nullptr on the CPU).
  std::vector<at::Tensor> out = package_->run(inputs_, cuda_stream().value_or(nullptr));
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace condbench::aoti
