#pragma once
// A family timed per generated token as condbench's runner sees it (docs/design.md §8), whatever
// its Model: the models a run's flags select, and what the runner does with them. Plain
// declarations, without Google Benchmark or ATen, so that RunnerOptions can hold them; each family's
// implementation is TokenModelsOf<Model> (token_family.h), listed once in token_families.cpp.
#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "condbench/family.h"

namespace condbench {

struct RunnerOptions;
struct StrategyEntry;

// A selected case that its strategy declares it cannot run (unsupported_cases): "cpu/aoti/cond at d_model=..,
// batch 8: why".
struct UnsupportedCase {
  std::string strategy;  // its key
  std::string model;     // the model described
  int64_t batch = 1;
  std::string why;
};

// One model's --export-workload folder for the Python peer: its name, and what writes its files
// into the folder being built and returns its workload.json (written last, by the export).
struct ExportedModel {
  std::string name;
  std::function<nlohmann::json(const std::filesystem::path& folder)> write;
};

// The models of one token family that a run selects, each at the run's batches.
class TokenModels {
 public:
  virtual ~TokenModels() = default;
  virtual const Family& family() const = 0;
  virtual int deepest() const = 0;          // the most exits before the final one, over its models
  virtual void require_memory() const = 0;  // each model at each batch within the budget (memory_budget.h)
  virtual bool owns(const StrategyEntry& entry) const = 0;  // one of this family's strategies
  // Its cases that the options' devices, strategies and scenarios select, by name.
  virtual std::vector<std::string> case_names(const RunnerOptions& options) const = 0;
  // Those of them whose strategy declares it cannot run them (skipped when run).
  virtual std::vector<UnsupportedCase> unsupported(const RunnerOptions& options) const = 0;
  // Registers those cases with the runner (case_runner.h), says each model in the run's context,
  // and returns the cases' names.
  virtual std::vector<std::string> register_cases(const RunnerOptions& options) const = 0;
  // One folder per model the selected cases run, with the scenarios they run.
  virtual std::vector<ExportedModel> exported(const RunnerOptions& options) const = 0;
};

// A token family the runner knows: its Family, and the models it selects from condbench's flags
// (its sizes' flags, --batch; `full`: --full's models and batches too).
struct TokenFamily {
  const Family* family;
  std::function<std::shared_ptr<const TokenModels>(const std::map<std::string, std::string>& flags, bool full)> select;
};

// Every family timed per token, one line each (token_families.cpp).
const std::vector<TokenFamily>& token_families();
// The one of `family`; throws condbench::Error where it is not timed per token.
const TokenFamily& token_family(const Family& family);

}  // namespace condbench
