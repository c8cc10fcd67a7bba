#include "export_workload.h"
#include "condbench/model_file.h"
#include "condbench/model_files.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "condbench/error.h"
#include "condbench/flops.h"
#include "condbench/output_file.h"
#include "condbench/workload.h"

namespace condbench {

namespace fs = std::filesystem;

namespace {

// Success is claimed only for a file that was written whole and renamed into place.
void write_json(const fs::path& path, const nlohmann::json& value) {
  install_signal_cleanup();
  PendingFile pending(path.string());
  {
    std::ofstream out(pending.temp_path(), std::ios::binary);
    out << value.dump(2) << "\n";
    out.close();
    if (!out) fail("--export-workload: cannot write '" + path.string() + "'");
  }
  try {
    pending.commit();
  } catch (const Error& e) {
    fail(std::string("--export-workload: ") + e.what());
  }
}

}  // namespace

std::vector<std::string> export_workloads(const std::vector<BenchmarkCase>& cases, const std::string& dir) {
  std::map<std::string, std::pair<ModelSource, std::set<Scenario>>> models;  // key -> (source, scenarios)
  for (const BenchmarkCase& c : cases) {
    auto& entry = models[c.source.key()];
    entry.first = c.source;
    entry.second.insert(c.scenario);
  }
  std::vector<std::string> written;
  for (const auto& [key, entry] : models) {
    const auto workload = shared_workload(entry.first, 1);
    const ModelConfig& config = workload->config();
    const std::string name = config.tag();
    const fs::path out = fs::path(dir) / name;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) fail("--export-workload: cannot create '" + out.string() + "': " + ec.message());
    const ModelFileFamily* model_file = config.family->model_file();
    if (!model_file)  // a model file's weights are its module's: the peer loads it (model_file.py)
      save_state_dict_file(workload->model()->state_dict(), (out / "weights.pt").string());
    save_tensor_file(workload->pool(), (out / "pool.pt").string());
    nlohmann::json meta;
    // The model for the peer (bench/python): its family, every size, and the benchmark-name axes
    // its results carry.
    nlohmann::json& described = meta["config"];
    described["family"] = config.family->name();
    for (const FamilyAxis& axis : config.family->axes()) described[axis.key] = config.size(axis.key);
    described["num_classes"] = config.num_classes;
    described["blocks"] = config.blocks;
    meta["name_axes"] = config.name_axes();
    // Where aoti_compile.py puts this model's packages and condbench finds them: the sizes in the
    // family's order, which the config object above (its keys sorted) does not keep.
    meta["tag"] = name;
    // What one row costs at full depth: the peer walks as much of the pool as condbench does.
    meta["full_model_flops"] = full_model_flops(config);
    meta["pool_rows"] = workload->pool().size(0);
    if (model_file)
      meta["model_file"] = fs::absolute(model_file->folder()).string();
    else if (entry.first.weights_path.empty())
      meta["weight_seed"] = entry.first.seed;
    else
      meta["weights_file"] = entry.first.weights_path;
    for (const Scenario& scenario : entry.second) {
      meta["thresholds"][scenario.str()] = workload->thresholds(scenario);
      meta["walk_order"][scenario.str()] = workload->walk_order(scenario);  // the rows in condbench's visiting order
    }
    write_json(out / "workload.json", meta);
    written.push_back(out.string());
  }
  return written;
}

}  // namespace condbench
