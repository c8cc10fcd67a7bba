#pragma once
// What a benchmark runs on: the model, the input pool that iterations walk through, and the
// thresholds of each scenario (forced, or calibrated on the pool). Built once per model and pool
// and shared by every strategy, so all of them see exactly the same work.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "condbench/memory_budget.h"
#include "condbench/model.h"
#include "condbench/scenario.h"

namespace condbench {

constexpr uint64_t kDefaultWeightSeed = 1;
constexpr uint64_t kPoolSeed = 0x5eed;
constexpr int64_t kMinPoolRows = 1024;                // docs/design.md §3: at least 1024 rows
constexpr int64_t kMaxPoolValues = int64_t{1} << 28;  // an input pool's values: 1 GiB of float32, 2 of int64
// The largest input row a run can pool (at its smallest pool): what a model file's row may hold
// for condbench, which compiles it only where it can run it.
constexpr int64_t kMaxPooledRowValues = kMaxPoolValues / kMinPoolRows;

// Where the weights come from: a state_dict file, else seeded weights for the config. With a file,
// `given` holds the sizes the file cannot say (axes without from_weights: a transformer's heads and
// tokens per row), by axis key; config is unused.
struct ModelSource {
  ModelConfig config = model_config("mlp");
  uint64_t seed = kDefaultWeightSeed;
  std::string weights_path;
  std::map<std::string, int> given;

  std::string key() const;
};

class Workload {
 public:
  Workload(EarlyExitModel model, int64_t batch);

  const EarlyExitModel& model() const { return model_; }
  const ModelConfig& config() const { return model_->config(); }
  int64_t batch() const { return batch_; }
  const at::Tensor& pool() const { return pool_; }  // [rows, row_shape...], CPU
  // The pool cut into whole batches in pool order (views, CPU).
  const std::vector<at::Tensor>& batches() const { return batches_; }
  // The batches iterations visit for a scenario (CPU). For mix:* the pool is reordered so that
  // exits interleave: any prefix of the walk, and every batch, holds close to the calibrated
  // shares, so a slow strategy timed over a few hundred inferences sees the same mix as a fast
  // one timed over the whole pool many times. Forced scenarios keep pool order.
  std::vector<at::Tensor> batches_for(const Scenario& scenario) const;
  // The pool rows in the order iterations visit them for a scenario (what batches_for cuts up).
  std::vector<int64_t> walk_order(const Scenario& scenario) const;

  // Thresholds for a scenario; mix:* are calibrated on the pool once and cached. Throws
  // condbench::Error for exit:K past this model's final exit.
  std::vector<float> thresholds(const Scenario& scenario) const;

  static int64_t pool_rows_for(int64_t batch);
  // The input pool's part of the memory budget for `batch`: pool_rows_for(batch) rows of
  // `row_elements` values, each an int64 (a token id: two floats' bytes) or a float.
  static void add_pool_need(MemoryNeed& need, int64_t batch, int64_t row_elements, bool int64_values);

 private:
  EarlyExitModel model_;
  int64_t batch_;
  at::Tensor pool_;
  std::vector<at::Tensor> batches_;
  std::vector<float> confidences_;  // [rows][blocks], for calibration
  ScenarioThresholds thresholds_{config().blocks, [this] { return confidences_; }};
};

// The exit rule's score of every row of `rows` at every exit but the final one, row-major
// [rows][blocks]; throws condbench::Error naming the exit and the row (of `whose`: "condbench's
// input pool") where one is outside (0, 1] (a model file's confidence(), which scenarios' forced
// thresholds 0 and 1 would misread). With `pass_non_finite`, a NaN or infinite score passes: the
// caller names the overflow itself (condbench-infer, by the strategy whose logits are not finite).
std::vector<float> exit_scores_in_range(const EarlyExitModel& model, const at::Tensor& rows, const std::string& whose,
                                        bool pass_non_finite = false);

// The process-wide cache: one model per source and one workload per (source, batch), so that
// Google Benchmark's repeated calls of a benchmark function do not rebuild or recalibrate.
EarlyExitModel shared_model(const ModelSource& source);
std::shared_ptr<const Workload> shared_workload(const ModelSource& source, int64_t batch);

}  // namespace condbench
