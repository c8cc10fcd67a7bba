#include "export_workload.h"
#include "condbench/model_file.h"
#include "condbench/torch_save_files.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "benchmark_case.h"
#include "condbench/agreement.h"
#include "condbench/error.h"
#include "condbench/output_file.h"
#include "condbench/workload.h"

namespace condbench {

namespace fs = std::filesystem;

namespace {

// Success is claimed only for a file that was written whole and renamed into place.
void write_json(const fs::path& path, const nlohmann::json& value) {
  install_signal_cleanup();
  PendingFile pending(path.string());
  pending.write(value.dump(2) + "\n");
  pending.commit();
}

// A model's folder is built whole beside its target and then moved into place: a new one renamed,
// an earlier export's replaced file by file (each rename atomic). A failure (a full disk) leaves
// nothing of the new folder behind.
void install_folder(PendingDirectory& built, const fs::path& target) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec))) {
    fs::rename(built.temp_path(), target, ec);
    if (ec) fail("cannot rename '" + built.temp_path() + "' to '" + target.string() + "': " + ec.message());
    built.release();
    return;
  }
  // Every destination checked before the first move, so a refusal leaves the earlier export as it was
  // and the new one whole; workload.json, which the peer reads first, moved last.
  std::vector<fs::path> files;
  for (const fs::directory_entry& file : fs::directory_iterator(built.temp_path())) files.push_back(file.path());
  std::stable_partition(files.begin(), files.end(), [](const fs::path& f) { return f.filename() != "workload.json"; });
  for (const fs::path& file : files) {
    const fs::path to = target / file.filename();
    if (!special_file_kind(to.string()).empty() || fs::is_directory(fs::symlink_status(to, ec))) {
      const std::string kept = built.temp_path();
      built.release();  // nothing moved yet: what was built is whole, kept and named
      fail("cannot move '" + file.filename().string() + "' into '" + target.string() + "' (" +
           std::make_error_code(std::errc::is_a_directory).message() + "); it is kept in '" + kept + "'");
    }
  }
  for (const fs::path& file : files) {
    fs::rename(file, target / file.filename(), ec);
    if (ec) fail("cannot move '" + file.string() + "' into '" + target.string() + "': " + ec.message());
  }
}

// An error about a file in the folder being built, naming the file where it was to be.
std::string as_written(const Error& e, const fs::path& building, const fs::path& target) {
  std::string text = e.what();
  for (size_t at = text.find(building.string()); at != std::string::npos; at = text.find(building.string(), at))
    text.replace(at, building.string().size(), target.string());
  return text;
}

// Builds `name` under `dir` in a pending folder: `write(folder)` fills it (workload.json last),
// then it is moved into place. Every failure is one line naming the file where it was to be.
void export_folder(const std::string& dir, const std::string& name, const std::function<void(const fs::path&)>& write) {
  const fs::path out = fs::path(dir) / name;
  if (const std::string kind = special_file_kind(out.string()); !kind.empty())
    fail("--export-workload: '" + out.string() + "' is " + kind + "; it is never replaced");
  install_signal_cleanup();
  PendingDirectory built(out.string());
  const fs::path in = built.temp_path();
  try {
    write(in);
    throw_if_interrupted();
  } catch (const Error& e) {
    fail("--export-workload: " + as_written(e, in, out));
  }
  try {
    install_folder(built, out);
  } catch (const Error& e) {
    fail(std::string("--export-workload: ") + e.what());
  }
}

// The export's folder: created where absent, and then removed whole again if the export fails
// (everything in it is this export's), so a failed export leaves nothing; a folder that was there
// before is left as it is, with the models written whole before the failure.
class ExportDir {
 public:
  explicit ExportDir(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    created_ = fs::create_directories(dir_, ec);
    if (ec) fail("--export-workload: cannot create '" + dir_ + "': " + ec.message());
  }
  ExportDir(const ExportDir&) = delete;
  ExportDir& operator=(const ExportDir&) = delete;
  ~ExportDir() {
    std::error_code ec;
    if (created_ && !done_) fs::remove_all(dir_, ec);
  }
  void done() { done_ = true; }

 private:
  std::string dir_;
  bool created_ = false, done_ = false;
};

// One model's folder: its weights (unless a model file's module holds them), its input pool, and
// workload.json's text.
nlohmann::json export_family_model(const Workload& workload, const ModelSource& source,
                                   const std::set<Scenario>& scenarios, const fs::path& in) {
  const ModelConfig& config = workload.config();
  // A model file's weights are its module's: the peer loads the module from its folder (model_file.py).
  const std::string module_folder = config.family->module_folder();
  if (config.family->state_dict()) save_state_dict_file(workload.model()->state_dict(), (in / "weights.pt").string());
  throw_if_interrupted();
  save_tensor_file(workload.pool(), (in / "pool.pt").string());
  throw_if_interrupted();
  nlohmann::json meta;
  // The model for the peer (python/condbench): its family, every size, and the benchmark-name axes
  // its results carry.
  nlohmann::json& described = meta["config"];
  described["family"] = config.family->name();
  for (const FamilyAxis& axis : config.family->axes()) described[axis.key] = config.size(axis.key);
  described["num_classes"] = config.num_classes;
  described["blocks"] = config.blocks;
  meta["name_axes"] = config.name_axes();
  // Where condbench.aoti puts this model's packages and condbench finds them: the sizes in the
  // family's order, which the config object above (its keys sorted) does not keep.
  meta["tag"] = config.tag();
  meta["pool_rows"] = workload.pool().size(0);
  if (!module_folder.empty()) {
    meta["model_file"] = fs::absolute(module_folder).string();
    // When the peer's variants agree with the module on its reference rows: condbench's rule, as data.
    meta["agreement"]["absolute_tolerance"] = kModelFileAgreement.absolute_tolerance;
    meta["agreement"]["relative_tolerance"] = kModelFileAgreement.relative_tolerance;
    meta["agreement"]["tie_margin"] = kModelFileAgreement.tie_margin;
  } else if (source.weights_path.empty())
    meta["weight_seed"] = source.seed;
  else
    meta["weights_file"] = source.weights_path;
  // The rows condbench visits one at a time, in its order and as many as it walks (walked_batches):
  // the peer walks exactly these.
  for (const Scenario& scenario : scenarios) {
    meta["thresholds"][scenario.str()] = workload.thresholds(scenario);
    std::vector<int64_t> walk = workload.walk_order(scenario);
    walk.resize(walked_batches(config, 1, walk.size()));
    meta["walk"][scenario.str()] = walk;
  }
  return meta;
}

}  // namespace

std::vector<std::string> export_models(const std::vector<ExportedModel>& models, const std::string& dir) {
  std::set<std::string> names;
  for (const ExportedModel& model : models)
    if (!names.insert(model.name).second) fail("--export-workload: two models are named " + model.name);
  std::vector<std::string> written;
  ExportDir export_dir(dir);
  for (const ExportedModel& model : models) {
    export_folder(dir, model.name, [&](const fs::path& in) { write_json(in / "workload.json", model.write(in)); });
    written.push_back((fs::path(dir) / model.name).string());
  }
  export_dir.done();
  return written;
}

std::vector<ExportedModel> exported_models(const std::vector<BenchmarkCase>& cases) {
  std::map<std::string, std::pair<ModelSource, std::set<Scenario>>> models;  // key -> (source, scenarios)
  for (const BenchmarkCase& c : cases) {
    auto& entry = models[c.source.key()];
    entry.first = c.source;
    entry.second.insert(c.scenario);
  }
  std::vector<ExportedModel> out;
  for (const auto& [key, entry] : models) {
    const auto workload = shared_workload(entry.first, 1);
    out.push_back({workload->config().tag(), [workload, entry = entry](const fs::path& in) {
                     return export_family_model(*workload, entry.first, entry.second, in);
                   }});
  }
  return out;
}

}  // namespace condbench
