#include "export_workload.h"
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
    const bool mlp = config.family == ModelFamily::mlp;
    // Built piece by piece: GCC 12 warns falsely (stringop-overflow) on one long chain of +.
    std::string name;
    auto add = [&name](const char* tag, int value) {
      name += tag;
      name += std::to_string(value);
    };
    if (mlp) {
      add("h", config.hidden);
    } else {
      add("t", config.d_model);
      add("-a", config.heads);
      add("-f", config.ffn);
      add("-s", config.seq);
    }
    add("-b", config.blocks);
    const fs::path out = fs::path(dir) / name;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) fail("--export-workload: cannot create '" + out.string() + "': " + ec.message());
    save_state_dict_file(workload->model()->state_dict(), (out / "weights.pt").string());
    save_tensor_file(workload->pool(), (out / "pool.pt").string());
    nlohmann::json meta;
    if (mlp) {
      meta["config"] = {{"in_features", config.in_features},
                        {"hidden", config.hidden},
                        {"num_classes", config.num_classes},
                        {"blocks", config.blocks}};
    } else {
      meta["config"] = {{"family", to_string(config.family)},
                        {"d_model", config.d_model},
                        {"heads", config.heads},
                        {"ffn", config.ffn},
                        {"seq", config.seq},
                        {"num_classes", config.num_classes},
                        {"blocks", config.blocks}};
    }
    // What one row costs at full depth: the peer walks as much of the pool as condbench does.
    meta["full_model_flops"] = full_model_flops(config);
    meta["pool_rows"] = workload->pool().size(0);
    if (entry.first.weights_path.empty())
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
