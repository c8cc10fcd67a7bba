#pragma once
// A family timed per generated token in condbench's runner (token_models.h), for any family's
// Model: its models from the flags, its cases, its memory check and its export, from the family's
// work (token_case.h). A family gives make_token_family(its Family, its TokenWork), one line of
// token_families.cpp.
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "condbench/error.h"
#include "runner_options.h"
#include "token_case.h"
#include "token_models.h"

namespace condbench {

template <TokenModel Model>
class TokenModelsOf final : public TokenModels {
 public:
  using Config = typename Model::Config;
  TokenModelsOf(const Family& family, const TokenWork<Model>& work, std::vector<Config> configs,
                std::vector<int64_t> batches)
      : family_(family), work_(work), configs_(std::move(configs)), batches_(std::move(batches)) {}

  const Family& family() const override { return family_; }
  int deepest() const override {
    int deepest = 0;
    for (const Config& c : configs_) deepest = std::max(deepest, c.num_exits() - 1);
    return deepest;
  }
  void require_memory() const override {
    for (const Config& c : configs_)
      for (const int64_t batch : batches_)
        c.memory_need(batch).require("--batch " + std::to_string(batch) + " of the " + family_.name() + " " +
                                     c.describe());
  }
  bool owns(const StrategyEntry& entry) const override {
    return dynamic_cast<const TokenStrategyInfo<Model>*>(&entry) != nullptr;
  }
  std::vector<std::string> case_names(const RunnerOptions& options) const override { return names(cases(options)); }
  std::vector<UnsupportedCase> unsupported(const RunnerOptions& options) const override {
    std::vector<UnsupportedCase> out;
    for (const TokenCase<Model>& c : cases(options))
      if (const Unsupported why = c.strategy->supports(c.config, c.strategy->device, c.batch))
        out.push_back({c.strategy->key(), "model=" + family_.name() + " " + c.config.describe(), c.batch, *why});
    return out;
  }
  std::vector<std::string> register_cases(const RunnerOptions& options) const override {
    const std::vector<TokenCase<Model>> selected = cases(options);
    register_token_cases(selected, work_);
    for (const Config& c : configs_)
      benchmark::AddCustomContext(family_.name() + " " + c.describe(),
                                  "seeded weights; one iteration is one generated token");
    return names(selected);
  }
  std::vector<ExportedModel> exported(const RunnerOptions& options) const override {
    std::map<std::string, std::pair<Config, std::set<Scenario>>> models;  // tag -> (config, scenarios)
    for (const TokenCase<Model>& c : cases(options)) {
      auto& entry = models.try_emplace(c.config.tag(), c.config, std::set<Scenario>{}).first->second;
      entry.second.insert(c.scenario);
    }
    std::vector<ExportedModel> out;
    for (const auto& [tag, entry] : models)
      out.push_back({tag, [work = work_, entry = entry](const std::filesystem::path& folder) {
                       return work.export_model(entry.first, entry.second, folder);
                     }});
    return out;
  }

 private:
  std::vector<TokenCase<Model>> cases(const RunnerOptions& options) const {
    return select_token_cases<Model>(configs_, batches_, options.devices, options.strategies, options.scenarios);
  }
  static std::vector<std::string> names(const std::vector<TokenCase<Model>>& cases) {
    std::vector<std::string> out;
    for (const TokenCase<Model>& c : cases) out.push_back(c.name());
    return out;
  }

  const Family& family_;
  TokenWork<Model> work_;
  std::vector<Config> configs_;
  std::vector<int64_t> batches_;
};

// `family`'s entry in token_families(): its models are `work.configs`'s, at --batch's batches or
// the family's.
template <TokenModel Model>
TokenFamily make_token_family(const Family& family, const TokenWork<Model>& work) {
  if (work.configs == nullptr || work.export_model == nullptr)
    fail("the " + family.name() + " family's TokenWork gives no configs or no export_model");
  return {&family, [&family, work](const std::map<std::string, std::string>& flags, bool full) {
            const auto batch = flags.find("--batch");
            return std::make_shared<const TokenModelsOf<Model>>(
                family, work, work.configs(flags, full),
                batch != flags.end() ? cli::parse_batches(batch->second) : family.runs_batches(full));
          }};
}

}  // namespace condbench
