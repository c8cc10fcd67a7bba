// A model file's compiled folder as a model family: see condbench/model_file.h.
#include "condbench/model_file.h"

#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string_view>

#include "condbench/aoti_loader.h"
#include "condbench/error.h"
#include "condbench/model.h"
#include "condbench/torch_device.h"
#include "condbench/torch_exit_rule.h"
#include "torch_save_reader.h"

namespace condbench {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxReferenceRows = 4096;
constexpr int64_t kMaxPoolFileRows = 65536;  // pool.pt: model_file.py writes kMinPoolRows

// How a message names a device: "CUDA", "the CPU".
std::string device_words(std::string_view device) { return device == "cuda" ? "CUDA" : "the CPU"; }

// The blocks and heads as the packages' compiled code, on the device they were compiled for. On
// CUDA a package runs on LibTorch's current stream (AOTInductor's runner takes a null stream as
// that one): the strategy's stream, or the capture stream while a CUDA graph is captured.
class PackageLayers final : public TorchLayers {
 public:
  PackageLayers(const ModelConfig& config, const std::string& folder, const std::vector<ModelFilePart>& parts,
                const std::string& confidence_package, Device device)
      : TorchLayers(config) {
    for (const ModelFilePart& part : parts) loaders_.push_back(load(folder, part.name, part.package, device));
    if (!confidence_package.empty()) confidence_ = load(folder, "confidence", confidence_package, device);
  }

  at::Tensor block(int k, const at::Tensor& h) const override { return run(*loaders_.at(2 * k), h); }
  at::Tensor head(int k, const at::Tensor& h) const override {
    return run(*loaders_.at(k < config().blocks ? 2 * k + 1 : loaders_.size() - 1), h);
  }
  at::Tensor confidence(const at::Tensor& logits) const override {  // float32, whatever the module returns
    return confidence_ ? run(*confidence_, logits).to(at::kFloat) : TorchLayers::confidence(logits);
  }

 private:
  using Loader = torch::inductor::AOTIModelPackageLoader;

  static std::unique_ptr<Loader> load(const std::string& folder, const std::string& part, const std::string& package,
                                      Device device) {
    const std::string path = (fs::path(folder) / package).string();
    try {
      return make_aoti_loader(path, /*device_index=*/device == Device::cuda ? 0 : -1);  // CUDA: device 0
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fail("model file " + folder + ": " + part + ": cannot load " + package + ": " + what.substr(0, what.find('\n')));
    }
  }

  static at::Tensor run(Loader& loader, const at::Tensor& x) {
    std::vector<at::Tensor> out = loader.run({x.contiguous()});
    return std::move(out.at(0));
  }

  std::vector<std::unique_ptr<Loader>> loaders_;  // stages[0], exits[0], ..., final
  std::unique_ptr<Loader> confidence_;
};

std::string sizes_text(const at::Tensor& t) {
  std::string text = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i)
    text += (i ? ", " : "") + std::to_string(t.size(static_cast<int64_t>(i)));
  return text + "]";
}

// How far `got` is beyond the logits tolerance from `want` (<= 0: within; NaN where either is).
double beyond_tolerance(const at::Tensor& got, const at::Tensor& want) {
  return (got - want)
      .abs()
      .sub(want.abs().mul(kModelFileAgreement.relative_tolerance))
      .sub(kModelFileAgreement.absolute_tolerance)
      .max()
      .item<double>();
}

[[noreturn]] void refuse_package(const std::string& folder, const ModelFilePart& part, const std::string& what) {
  fail("model file " + folder + ": " + part.name + " (" + part.package + ") " + what +
       ": not the package compiled for this manifest; compile the model file again");
}

// While alive, what is written to stderr (fd 2) goes to a temporary file; keep() writes it on to
// stderr, and the destructor drops what was not kept. AOTInductor's generated code prints its own
// "Error: ... API call failed at <its temporary source>" before it throws, which the probe below
// says in one line instead.
class StderrHeld {
 public:
  StderrHeld() : held_(std::tmpfile()) {
    std::fflush(stderr);
    if (held_ != nullptr) saved_ = dup(STDERR_FILENO);
    if (saved_ >= 0 && dup2(fileno(held_), STDERR_FILENO) < 0) {
      close(saved_);
      saved_ = -1;
    }
  }
  ~StderrHeld() {
    restore();
    if (held_ != nullptr) std::fclose(held_);
  }
  StderrHeld(const StderrHeld&) = delete;
  StderrHeld& operator=(const StderrHeld&) = delete;

  void keep() {
    restore();
    if (held_ == nullptr) return;
    std::rewind(held_);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, held_)) > 0;) std::fwrite(buffer, 1, n, stderr);
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    std::cerr.flush();
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  std::FILE* held_;
  int saved_ = -1;
};

// Every package run once on the reference rows, in the module's order, before any strategy uses
// them: a package that does not run on what the part before gives, or gives another shape than
// the manifest's (swapped, another model's, a manifest that lies about its shapes), is one line
// naming the part, not AOTInductor's own error in the middle of a run. Its numbers are what
// check_against_module compares, strategy by strategy, naming the row.
void probe_packages(const std::string& folder, const std::vector<ModelFilePart>& parts, const ModelFileReference& ref,
                    const TorchLayers& layers, const at::Device& device) {
  const auto refuse = [&](const ModelFilePart& part, const std::string& what) { refuse_package(folder, part, what); };
  const auto ran = [&](const ModelFilePart& part, const auto& call) -> at::Tensor {
    try {
      return call();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      refuse_package(folder, part, "does not run on the reference rows (" + printable(one_line(e), 200) + ")");
    }
  };
  const int stages = static_cast<int>(ref.confidence.size());
  at::Tensor h = ref.input.to(device);
  const int64_t rows = h.size(0);
  for (int k = 0; k <= stages; ++k) {
    if (k < stages) {
      const ModelFilePart& stage = parts[2 * static_cast<size_t>(k)];
      h = ran(stage, [&] { return layers.block(k, h); });
      std::vector<int64_t> want{rows};
      want.insert(want.end(), stage.output_row.begin(), stage.output_row.end());
      if (h.sizes() != at::IntArrayRef(want))
        refuse(stage, "gives " + sizes_text(h) + " on the reference rows where the manifest says " +
                          row_text(stage.output_row));
    }
    const ModelFilePart& head = k < stages ? parts[2 * static_cast<size_t>(k) + 1] : parts.back();
    const at::Tensor logits = ran(head, [&] { return layers.head(k, h); }).to(at::kCPU, at::kFloat);
    if (logits.sizes() != ref.logits[k].sizes())
      refuse(head, "gives " + sizes_text(logits) + " on the reference rows where the module gave " +
                       sizes_text(ref.logits[k]));
  }
  for (int k = 0; k < stages; ++k) {
    at::Tensor score;
    try {
      score = layers.confidence(ref.logits[k].to(device));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail("model file " + folder + ": confidence (confidence.pt2) does not run on exit " + std::to_string(k + 1) +
           "'s reference logits (" + printable(one_line(e), 200) + "): compile the model file again");
    }
    if (score.sizes() != ref.confidence[k].sizes())
      fail("model file " + folder + ": confidence (confidence.pt2) gives " + sizes_text(score) + " for exit " +
           std::to_string(k + 1) + "'s reference logits, not a score per row: compile the model file again");
  }
}

}  // namespace

ModelFileFamily::ModelFileFamily(const std::string& folder)
    : ModelFamily("?", "a model file compiled by python/condbench/model_file.py", {}) {
  const ModelFileManifest manifest = read_manifest(folder);
  folder_ = folder;
  // When it was compiled (or its manifest last rewritten): for the run's context, and the line saying
  // which folder a run uses and how old it is.
  std::error_code ec;
  const auto written = fs::last_write_time(fs::path(folder) / "manifest.json", ec);
  if (!ec) {
    written_ =
        std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(written));
    const std::time_t t = std::chrono::system_clock::to_time_t(*written_);
    std::tm utc{};
    char text[32];
    if (gmtime_r(&t, &utc) && std::strftime(text, sizeof text, "%Y-%m-%dT%H:%MZ", &utc) > 0) compiled_at_ = text;
  }
  torch_ = manifest.torch;
  reads_ = manifest.reads;
  if (torch_ != TORCH_VERSION)
    fail("model file " + folder + ": compiled by torch " + printable(torch_) + ", this LibTorch is " + TORCH_VERSION +
         ": its packages are native code for that torch; compile the model file again with this one");
  device_ = manifest.device == "cuda" ? Device::cuda : Device::cpu;
  set_name(manifest.file);
  digest_ = manifest.digest;
  classes_ = manifest.classes;
  parts_ = manifest.parts;
  integer_input_ = manifest.integer_input;
  memory_terms_ = manifest.memory_terms();
  inputs_ = manifest.inputs;
  confidence_package_ = manifest.confidence_package;
  const int stages = manifest.stages();
  const auto in_folder = [&](const std::string& name) { return (fs::path(folder) / name).string(); };
  for (const ModelFilePart& part : parts_)
    if (!plain_file(in_folder(part.package)))
      fail("model file " + folder + ": " + part.name + ": its package " + part.package + " is missing (or a link)");
  if (!confidence_package_.empty() && !plain_file(in_folder(confidence_package_)))
    fail("model file " + folder + ": confidence: its package " + confidence_package_ + " is missing (or a link)");
  for (const auto& [module, given] : manifest.whole_model) {
    WholeModelPackage& w = whole_model_[module];
    w.unavailable = given.unavailable;
    w.workaround = given.workaround;
    w.default_refused = given.default_refused;
    if (given.package.empty()) continue;
    w.description = "compiled with the model file by python/condbench/model_file.py: " + description();
    if (!w.workaround.empty())
      w.description += "; workaround: " + w.workaround + ", since with Inductor's default options " +
                       w.default_refused +
                       " (docs/upstream-cond-layout.md); without layout optimization the compiled convolutions keep "
                       "NCHW too, so these timings are of that form, not of the default's";
    w.path = in_folder(given.package);
    if (!plain_file(w.path))
      fail("model file " + folder + ": " + module + ": its package " + given.package + " is missing (or a link)");
  }

  // The module's own forward on the reference rows.
  const std::string reference_path = in_folder(manifest.reference);
  if (!plain_file(reference_path)) fail("model file " + folder + ": reference.pt is missing (or a link)");
  std::map<std::string, std::vector<int64_t>> expected = {{"input", parts_.front().input_row}};
  for (int k = 0; k <= stages; ++k) expected["logits." + std::to_string(k)] = {classes_};
  for (int k = 0; k < stages; ++k) expected["confidence." + std::to_string(k)] = {};
  int64_t rows = -1;
  auto check = [&](const std::vector<std::pair<std::string, at::Tensor>>& headers) {
    std::set<std::string> seen;
    for (const auto& [key, t] : headers) {
      const auto want = expected.find(key);
      if (want == expected.end()) fail("unexpected entry '" + printable(key) + "'");
      const at::ScalarType dtype = key == "input" && integer_input_ ? at::kLong : at::kFloat;
      if (t.scalar_type() != dtype) fail("'" + key + "' is not " + (dtype == at::kLong ? "int64" : "float32"));
      if (t.dim() != static_cast<int64_t>(want->second.size()) + 1 ||
          t.sizes().slice(1) != at::IntArrayRef(want->second) || t.size(0) < 1 || t.size(0) > kMaxReferenceRows ||
          (rows >= 0 && t.size(0) != rows))
        fail("'" + key + "' is not " + row_text(want->second) + " for the same rows as the others");
      rows = t.size(0);
      seen.insert(key);
    }
    if (seen.size() != expected.size())
      fail("holds " + std::to_string(seen.size()) + " of its " + std::to_string(expected.size()) + " entries");
  };
  detail::SavedObject saved = detail::read_torch_save_file("model file reference", reference_path, check);
  std::map<std::string, at::Tensor> held(saved.items.begin(), saved.items.end());
  for (const auto& [key, t] : held)
    if (!t.isfinite().all().item<bool>())
      fail("model file " + folder + ": reference.pt: '" + key + "' holds NaN or infinite values");
  reference_.input = held.at("input");
  check_input_values(reference_.input, "model file " + folder + ": reference.pt's input");
  if (integer_input_) read_pool(in_folder(manifest.pool));
  for (int k = 0; k <= stages; ++k) reference_.logits.push_back(held.at("logits." + std::to_string(k)));
  for (int k = 0; k < stages; ++k) {
    // The scenarios' thresholds read 1 as "no row leaves here" and 0 as "every row does": a score
    // must be in (0, 1], as the largest softmax probability is (docs/your-model.md).
    const at::Tensor& score = held.at("confidence." + std::to_string(k));
    if (!math::scores_in_range(score))
      fail("model file " + folder + ": reference.pt: exit " + std::to_string(k + 1) +
           "'s scores are not all in (0, 1]: the exit rule's score must be (docs/your-model.md)");
    reference_.confidence.push_back(score);
  }
}

ModelFileFamily::~ModelFileFamily() = default;

void ModelFileFamily::read_pool(const std::string& path) {
  if (!plain_file(path)) fail("model file " + folder_ + ": pool.pt is missing (or a link)");
  const std::vector<int64_t>& row = parts_.front().input_row;
  auto check = [&](const std::vector<std::pair<std::string, at::Tensor>>& headers) {
    if (headers.size() != 1 || headers.front().first != "input") fail("holds other entries than 'input'");
    const at::Tensor& t = headers.front().second;
    if (t.scalar_type() != at::kLong || t.dim() != static_cast<int64_t>(row.size()) + 1 ||
        t.sizes().slice(1) != at::IntArrayRef(row) || t.size(0) < 1 || t.size(0) > kMaxPoolFileRows)
      fail("'input' is not int64 " + row_text(row) + " of 1 to " + std::to_string(kMaxPoolFileRows) + " rows");
  };
  detail::SavedObject saved = detail::read_torch_save_file("model file pool", path, check);
  pool_ = saved.items.front().second.contiguous();
  check_input_values(pool_, "model file " + folder_ + ": pool.pt");
}

void ModelFileFamily::example_rows(int64_t rows, at::Tensor& out) const {
  if (!integer_input_) return ModelFamily::example_rows(rows, out);
  const int64_t held = pool_.size(0), copies = (rows + held - 1) / held;
  std::vector<int64_t> repeat(static_cast<size_t>(pool_.dim()), 1);
  repeat.front() = copies;
  out = (copies > 1 ? pool_.repeat(repeat) : pool_).narrow(0, 0, rows).contiguous();
}

void ModelFileFamily::check_input_values(const at::Tensor& rows, const std::string& whose) const {
  if (!integer_input_) return;
  const at::Tensor flat = rows.reshape({rows.size(0), -1}).to(at::kCPU, at::kLong).contiguous();
  int64_t begin = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    int64_t elements = 1;
    for (const int64_t d : inputs_[i].row) elements *= d;
    const at::Tensor values = flat.narrow(1, begin, elements);
    const at::Tensor outside = (values < 0).logical_or_(values >= inputs_[i].below);
    if (outside.any().item<bool>()) {
      const at::Tensor where = outside.nonzero()[0];
      const int64_t r = where[0].item<int64_t>(), c = where[1].item<int64_t>();
      fail(whose + ": row " + std::to_string(r) + (inputs_.size() > 1 ? ", input " + std::to_string(i) : "") +
           ", position " + std::to_string(c) + ": " + std::to_string(values[r][c].item<int64_t>()) + " is not in [0, " +
           std::to_string(inputs_[i].below) +
           ") (an id past the embedding's table: docs/your-model.md, \"Token ids\")");
    }
    begin += elements;
  }
}

std::optional<WholeModelPackage> ModelFileFamily::whole_model(const std::string& module) const {
  const auto it = whole_model_.find(module);
  if (it != whole_model_.end()) return it->second;
  WholeModelPackage none;
  none.unavailable = "a model file has no whole-model module '" + module + "'";
  return none;
}

void ModelFileFamily::check_before_use(Strategy& strategy, const std::vector<float>& thresholds, int64_t batch) const {
  check_against_module(strategy, *this, thresholds, batch);
}

std::string ModelFileFamily::description() const {
  // No path: result files travel to other machines (the digest names the folder in the cache).
  return name() + ", digest " + digest_ + ", compiled for " + device_words(to_string(device_)) + " by torch " + torch_ +
         (compiled_at_.empty() ? "" : " at " + compiled_at_);
}

std::string ModelFileFamily::age() const {
  if (!written_) return "of unknown age";
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *written_).count();
  if (seconds < 120) return "compiled " + std::to_string(std::max<int64_t>(seconds, 0)) + " s ago";
  if (seconds < 2 * 3600) return "compiled " + std::to_string(seconds / 60) + " min ago";
  if (seconds < 2 * 86400) return "compiled " + std::to_string(seconds / 3600) + " h ago";
  return "compiled " + std::to_string(seconds / 86400) + " days ago";
}

std::vector<int64_t> ModelFileFamily::runs_batches(bool full) const {
  return full ? std::vector<int64_t>{1, 8, 64, 512} : std::vector<int64_t>{1, 64};
}

std::vector<int64_t> ModelFileFamily::row_shape(const ModelConfig& /*config*/) const {
  return parts_.front().input_row;
}

std::vector<std::vector<int64_t>> ModelFileFamily::input_shapes(const ModelConfig& /*config*/) const {
  std::vector<std::vector<int64_t>> shapes;
  for (const ManifestInput& input : inputs_) shapes.push_back(input.row);
  return shapes;
}

int ModelFileFamily::width(const ModelConfig& /*config*/) const {
  int64_t elements = 1;
  for (const int64_t d : parts_[parts_.size() - 2].input_row) elements *= d;  // what the last exit reads
  return static_cast<int>(elements);
}

std::vector<MemoryTerm> ModelFileFamily::memory_terms(const ModelConfig& /*config*/) const { return memory_terms_; }

void ModelFileFamily::check(const ModelConfig& config) const {
  if (config.blocks != stages())
    fail("the model file " + name() + " has " + std::to_string(stages()) + " stages, not " +
         std::to_string(config.blocks) + " (its depth is the module's)");
  if (config.num_classes != classes_)
    fail("the model file " + name() + " has " + std::to_string(classes_) + " classes, not " +
         std::to_string(config.num_classes));
}

double ModelFileFamily::block_flops(const ModelConfig& /*config*/, int block) const {
  return parts_.at(2 * block).flops_per_row;
}
// Head k is part 2k + 1 (exits[k]); the final head, k == stages, is the last part.
const ModelFilePart& ModelFileFamily::head_part(int head) const {
  return head < stages() ? parts_.at(2 * static_cast<size_t>(head) + 1) : parts_.back();
}
double ModelFileFamily::head_flops(const ModelConfig& /*config*/, int head) const {
  return head_part(head).flops_per_row;
}
double ModelFileFamily::block_bytes(const ModelConfig& /*config*/, int block) const {
  return parts_.at(2 * block).bytes;
}
double ModelFileFamily::head_bytes(const ModelConfig& /*config*/, int head) const { return head_part(head).bytes; }

std::shared_ptr<const TorchLayers> ModelFileFamily::layers(const ModelConfig& config,
                                                           std::vector<at::Tensor> /*params*/,
                                                           const at::Device& device) const {
  if (const std::string why = unsupported_on(device.is_cuda() ? "cuda" : "cpu"); !why.empty()) fail(why);
  check(config);
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!loaded_) {
    auto layers = std::make_shared<PackageLayers>(config, folder_, parts_, confidence_package_, device_);
    StderrHeld held;
    probe_packages(folder_, parts_, reference_, *layers, device);
    held.keep();
    loaded_ = std::move(layers);
  }
  return loaded_;
}

std::string ModelFileFamily::unsupported_on(std::string_view device) const {
  if (device == to_string(device_)) return "";
  // A package is native code for one device: the other device's are another folder.
  return "the model file is compiled for " + device_words(to_string(device_)) +
         " (scripts/run --device=" + std::string(device) + " --model-file=FILE.py compiles it for " +
         device_words(device) + ")";
}

const ModelFileFamily& load_model_file(const std::string& folder) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const ModelFileFamily>> loaded;
  if (folder.size() > 3 && folder.compare(folder.size() - 3, 3, ".py") == 0)
    fail("model file " + folder +
         ": this is the Python file; condbench reads the folder it compiles to: "
         "scripts/run --model-file=" +
         folder + " compiles and runs it, or .venv/bin/python -m condbench.model_file compile " + folder +
         " prints the folder");
  fs::path dir(folder);
  if (dir.filename() == "manifest.json") dir = dir.parent_path();
  std::error_code ec;
  const std::string key = fs::weakly_canonical(dir, ec).string();
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(key);
  if (it == loaded.end()) it = loaded.emplace(key, std::make_unique<ModelFileFamily>(dir.string())).first;
  return *it->second;
}

void check_against_module(Strategy& strategy, const ModelFileFamily& family, const std::vector<float>& thresholds,
                          int64_t batch) {
  const ModelFileReference& ref = family.reference();
  const int64_t rows = ref.input.size(0);
  const int blocks = static_cast<int>(ref.confidence.size());
  for (int64_t start = 0; start < rows; start += batch) {
    // `batch` rows from `start`, wrapping round: a strategy runs the batch it was prepared for.
    const at::Tensor index = at::arange(start, start + batch, at::kLong).remainder(rows);
    const at::Tensor input = ref.input.index_select(0, index).to(torch_device(strategy.device())).contiguous();
    const ExitOutput& out = strategy.run(input, thresholds);
    strategy.finish();
    const at::Tensor ids = out.exit_id.to(at::kCPU, at::kInt).contiguous();
    const at::Tensor logits = out.logits.to(at::kCPU, at::kFloat).contiguous();
    for (int64_t j = 0; j < batch; ++j) {
      const int64_t r = index[j].item<int64_t>();
      int expected = blocks + 1;
      bool tie = false;
      for (int k = 0; k < blocks; ++k) {
        const double score = ref.confidence[k][r].item<double>();
        tie |= std::abs(score - thresholds[k]) < kModelFileAgreement.tie_margin;
        if (math::exit_fires(static_cast<float>(score), thresholds[k])) {
          expected = k + 1;
          break;
        }
      }
      if (tie) continue;
      const int got = ids[j].item<int>();
      if (got != expected)
        fail("differs from the module's own forward on reference row " + std::to_string(r) + ": exit " +
             std::to_string(got) + ", the module's " + std::to_string(expected));
      const at::Tensor want = ref.logits[expected - 1][r];
      if (!(beyond_tolerance(logits[j], want) <= 0))  // NaN logits too
        fail("differs from the module's own forward on reference row " + std::to_string(r) + ": its logits at exit " +
             std::to_string(expected) + " are off by more than " +
             std::to_string(kModelFileAgreement.absolute_tolerance) + " + " +
             std::to_string(kModelFileAgreement.relative_tolerance) + " x |logit|");
    }
  }
}

}  // namespace condbench
