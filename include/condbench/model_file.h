#pragma once
// A model file (docs/your-model.md): the user's early-exit PyTorch module, compiled part by part by
// python/condbench/model_file.py into a folder condbench reads as one more model family.
//
//   <folder>/manifest.json         the parts in order (stages[k], exits[k], ..., final): shapes,
//                                  FLOPs and bytes per row, package; classes; the device (cpu or
//                                  cuda) and torch version the packages are compiled for; digest
//                                  (read by read_manifest, condbench/model_file_manifest.h)
//   <folder>/stage0.pt2, exit0.pt2, ..., final.pt2 [, confidence.pt2]   AOTInductor packages
//   <folder>/cond.pt2, masked.pt2  the aoti engine's whole-model modules, where they could be made
//   <folder>/reference.pt          the module's own forward on example_input(64): the input, every
//                                  head's logits, every exit's score
//
// The family's blocks and heads run those packages (torch::inductor::AOTIModelPackageLoader), so
// every strategy that works through TorchLayers runs the model unchanged. Its weights are inside
// the packages: the family has no parameters of condbench's. A folder comes from the user's machine
// and was compiled there (condbench never loads packages made elsewhere: a package is native code);
// everything read from it is checked, and anything wrong is one line naming the folder and the part.
#include <ATen/core/Tensor.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "condbench/agreement.h"
#include "condbench/family.h"
#include "condbench/model_file_manifest.h"
#include "condbench/strategy.h"

namespace condbench {

// When a strategy agrees with the module's own forward on a reference row (ModelFileFamily::check):
// the exit id, unless a score is within tie_margin of a threshold (either way is right), and the
// logits within absolute + relative x |logit|. The packages were checked against the module's parts
// more tightly (kCompileCheck); a chain of them adds a little. The peer receives the rule as data,
// in the exported workload's "agreement".
inline constexpr Tolerances kModelFileAgreement{
    .absolute_tolerance = 1e-4, .relative_tolerance = 1e-3, .tie_margin = 1e-4};

// The module's own forward on the reference rows (reference.pt).
struct ModelFileReference {
  at::Tensor input;                    // [rows, row...]: float32, or int64 for an integer input
  std::vector<at::Tensor> logits;      // per head, the final head's last: [rows, classes]
  std::vector<at::Tensor> confidence;  // per exit: [rows]
};

class ModelFileFamily final : public ModelFamily {
 public:
  // Reads and checks `folder` (or its manifest.json); throws condbench::Error naming what is wrong.
  explicit ModelFileFamily(const std::string& folder);
  ~ModelFileFamily() override;

  const std::string& folder() const { return folder_; }
  const std::string& digest() const { return digest_; }
  Device device() const { return device_; }  // what the packages run on
  // "cnn.py, digest 1a2b..., compiled for the CPU by torch 2.15.0 at 2026-12-05T09:41Z", for the
  // result's context.
  std::string description() const;
  // "compiled 3 min ago" (from its manifest's time), for the line saying which folder a run uses.
  std::string age() const;
  const ModelFileReference& reference() const { return reference_; }
  // The files the module read while it loaded (its manifest's "reads"): inputs no output may overwrite.
  const std::vector<std::string>& reads() const { return reads_; }
  // The aoti engine's whole-model package of `module` ("cond": the nested torch.cond generated from
  // the stages; "masked"): always an answer, its path or why the folder has none.
  std::optional<WholeModelPackage> whole_model(const std::string& module) const override;

  // A model file has no state_dict contract: its weights are inside its packages.
  const StateDictContract* state_dict() const override { return nullptr; }
  // Its strategies are checked against the module's own forward (check_against_module).
  void check_before_use(Strategy& strategy, const std::vector<float>& thresholds, int64_t batch) const override;
  std::vector<std::pair<std::string, std::string>> provenance() const override {
    return {{"model_file", description()}};
  }
  std::string module_folder() const override { return folder_; }
  bool capture_may_refuse() const override { return true; }  // the packages are the user's code

  // An int64 input (token ids, and masks): condbench's pool is the folder's example rows (pool.pt,
  // example_input()'s), and every value must be below its input's limit (the manifest's "below").
  bool integer_input() const override { return integer_input_; }
  void example_rows(int64_t rows, at::Tensor& out) const override;
  void check_input_values(const at::Tensor& rows, const std::string& whose) const override;

  int default_blocks() const override { return stages(); }
  int default_classes() const override { return classes_; }
  std::vector<int> runs_blocks(bool /*full*/) const override { return {stages()}; }
  std::vector<int64_t> runs_batches(bool full) const override;
  std::vector<int64_t> row_shape(const ModelConfig& config) const override;
  std::vector<std::vector<int64_t>> input_shapes(const ModelConfig& config) const override;
  int width(const ModelConfig& config) const override;
  void check(const ModelConfig& config) const override;
  std::vector<MemoryTerm> memory_terms(const ModelConfig& config) const override;
  double block_flops(const ModelConfig& config, int block) const override;
  double head_flops(const ModelConfig& config, int head) const override;
  double block_bytes(const ModelConfig& config, int block) const override;
  double head_bytes(const ModelConfig& config, int head) const override;
  std::shared_ptr<const TorchLayers> layers(const ModelConfig& config, std::vector<at::Tensor> params,
                                            const at::Device& device) const override;
  std::string unsupported_on(std::string_view device) const override;

 private:
  int stages() const { return static_cast<int>(parts_.size() / 2); }
  const ModelFilePart& head_part(int head) const;
  void read_pool(const std::string& path);

  std::string folder_, digest_, torch_, compiled_at_;
  std::vector<std::string> reads_;
  std::optional<std::chrono::system_clock::time_point> written_;
  Device device_ = Device::cpu;  // what the packages were compiled for
  int classes_ = 0;
  bool integer_input_ = false;
  std::vector<ManifestInput> inputs_;     // packed into stages[0]'s input row, in order
  at::Tensor pool_;                       // an integer input's example rows (pool.pt)
  std::vector<ModelFilePart> parts_;      // stages[0], exits[0], stages[1], ..., final
  std::vector<MemoryTerm> memory_terms_;  // the manifest's (ModelFileManifest::memory_terms)
  std::string confidence_package_;        // "" when the exit rule is the largest softmax probability
  ModelFileReference reference_;
  std::map<std::string, WholeModelPackage> whole_model_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const TorchLayers> loaded_;  // the packages, loaded once
};

// The model file compiled into `folder`, read once per process and kept for it (a ModelConfig
// points at its family). Throws condbench::Error, one line, for a folder that cannot be used: a
// .py given instead of its folder, a missing or malformed manifest, a part whose package is
// absent, a folder compiled by another torch.
const ModelFileFamily& load_model_file(const std::string& folder);

// Runs `strategy` (prepared for `batch` rows) on the reference rows of `family` with `thresholds`
// and compares each row's exit id and logits with the module's own forward. Throws
// condbench::Error naming the first row that differs. Rows whose score is within the tie margin of a
// threshold it reaches are skipped: either side of a threshold is right there.
void check_against_module(Strategy& strategy, const ModelFileFamily& family, const std::vector<float>& thresholds,
                          int64_t batch);

}  // namespace condbench
