#include "condbench/workload.h"
#include "condbench/torch_save_files.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>

#include "condbench/error.h"
#include "condbench/exit_math.h"

namespace condbench {

std::string ModelSource::key() const {
  if (!weights_path.empty()) {
    std::string key = "file:" + weights_path;
    for (const auto& [axis, value] : given) key += " " + axis + "=" + std::to_string(value);
    return key;
  }
  return "seed:" + std::to_string(seed) + " " + config.describe();
}

int64_t Workload::pool_rows_for(int64_t batch) { return std::max(kMinPoolRows, batch); }

void Workload::add_pool_need(MemoryNeed& need, int64_t batch, int64_t row_elements, bool int64_values) {
  const int64_t rows = pool_rows_for(batch);
  need.add("the input pool",
           std::to_string(rows) + " rows x " + std::to_string(row_elements) +
               (int64_values ? " int64 values x 2" : " values"),
           static_cast<double>(rows) * static_cast<double>(row_elements) * (int64_values ? 2 : 1));
}

Workload::Workload(EarlyExitModel model, int64_t batch) : model_(std::move(model)), batch_(batch) {
  if (batch < 1) fail("batch must be at least 1, got " + std::to_string(batch));
  const ModelConfig& cfg = config();
  const int64_t rows = pool_rows_for(batch);
  if (static_cast<double>(rows) * static_cast<double>(cfg.row_elements()) > static_cast<double>(kMaxPoolValues))
    fail("an input pool of " + std::to_string(rows) + " rows of " + std::to_string(cfg.row_elements()) +
         " values is over condbench's 2^28 values (1 GiB of float32, 2 GiB of int64 ids): a smaller batch, seq or "
         "width");
  pool_ = input_rows(cfg, rows, kPoolSeed);
  for (int64_t start = 0; start + batch <= rows; start += batch)
    batches_.push_back(pool_.narrow(0, start, batch));  // row slices of a row-major tensor: contiguous
  // A model file's confidence() was checked on its own rows when it was compiled; these are the
  // rows condbench calibrates on and runs, which its code may score differently.
  confidences_ = exit_scores_in_range(model_, pool_, "condbench's input pool");
}

std::vector<float> exit_scores_in_range(const EarlyExitModel& model, const at::Tensor& rows, const std::string& whose,
                                        bool pass_non_finite) {
  const ModelConfig& cfg = model->config();
  const at::Tensor conf = model->exit_confidences(rows).contiguous();
  std::vector<float> scores(conf.data_ptr<float>(), conf.data_ptr<float>() + conf.numel());
  for (size_t i = 0; i < scores.size(); ++i)
    if (!math::score_in_range(scores[i]) && !(pass_non_finite && !std::isfinite(scores[i]))) {
      char score[32];
      std::snprintf(score, sizeof score, "%g", static_cast<double>(scores[i]));
      fail(cfg.describe() + ": its exit score at exit " + std::to_string(i % cfg.blocks + 1) + " on row " +
           std::to_string(i / cfg.blocks) + " of " + whose + " is " + score +
           ", outside (0, 1], where the exit rule's score must be (a model file's confidence(): docs/your-model.md)");
    }
  return scores;
}

std::vector<float> Workload::thresholds(const Scenario& scenario) const { return thresholds_(scenario); }

std::vector<int64_t> Workload::walk_order(const Scenario& scenario) const {
  const int rows = static_cast<int>(pool_.size(0)), blocks = config().blocks;
  if (scenario.kind() == ScenarioKind::forced_exit) {
    std::vector<int64_t> order(rows);
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  return interleaved_order(exits_for(confidences_, rows, blocks, thresholds(scenario)), blocks + 1);
}

std::vector<at::Tensor> Workload::batches_for(const Scenario& scenario) const {
  if (scenario.kind() == ScenarioKind::forced_exit) return batches_;
  const int64_t rows = pool_.size(0);
  const at::Tensor walked = pool_.index_select(0, at::tensor(walk_order(scenario), at::kLong));
  std::vector<at::Tensor> batches;
  for (int64_t start = 0; start + batch_ <= rows; start += batch_) batches.push_back(walked.narrow(0, start, batch_));
  return batches;
}

EarlyExitModel shared_model(const ModelSource& source) {
  static std::mutex mutex;
  static std::map<std::string, EarlyExitModel> models;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = models.find(source.key());
  if (it != models.end()) return it->second;
  EarlyExitModel model = nullptr;
  if (source.weights_path.empty()) {
    model = EarlyExitModel(source.config, source.seed);
  } else {
    const StateDict state_dict = load_state_dict_file(source.weights_path);
    model = EarlyExitModel(infer_config(state_dict, source.given), state_dict);
  }
  models.emplace(source.key(), model);
  return model;
}

std::shared_ptr<const Workload> shared_workload(const ModelSource& source, int64_t batch) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int64_t>, std::shared_ptr<const Workload>> workloads;
  const auto key = std::make_pair(source.key(), batch);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = workloads.find(key);
    if (it != workloads.end()) return it->second;
  }
  auto workload = std::make_shared<const Workload>(shared_model(source), batch);
  std::lock_guard<std::mutex> lock(mutex);
  return workloads.emplace(key, std::move(workload)).first->second;
}

}  // namespace condbench
