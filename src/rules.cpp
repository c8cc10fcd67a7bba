#include "condbench/rules.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "condbench/agreement.h"
#include "condbench/config.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "condbench/family.h"
#include "condbench/memory_budget.h"
#include "condbench/model_file.h"
#include "condbench/nvtx.h"
#include "condbench/result_format.h"

namespace condbench {
namespace {

// math::exit_fires as data: which comparison of a score with its threshold fires, read off the
// rule itself at a score below, at and above a threshold.
std::string exit_comparison() {
  constexpr float kThreshold = 0.5f;
  const bool below = math::exit_fires(0.25f, kThreshold), at = math::exit_fires(kThreshold, kThreshold),
             above = math::exit_fires(0.75f, kThreshold);
  if (below || !above) fail("math::exit_fires is not a comparison of a score against its threshold");
  return at ? ">=" : ">";
}

// results_agree's verdicts on rows at the edges of its tolerance: what Python's one comparison of
// logits (condbench.rules.logits_agree) must reproduce, so that the formula C++ owns is held, not
// trusted (a logit near zero judged by its row's largest; each row by its own; a shape mismatch).
nlohmann::json agreement_examples() {
  using Rows = std::vector<std::vector<double>>;
  const double tol = kAgreementRelativeTolerance;
  const std::vector<std::pair<Rows, Rows>> examples = {
      // {expected, logits}
      {{{10, -0.001, 2.5}}, {{10, -0.001, 2.5}}},
      {{{10, -0.001, 2.5}}, {{10, -0.001 + 0.9 * tol * 10, 2.5}}},
      {{{10, -0.001, 2.5}}, {{10, -0.001 + 1.1 * tol * 10, 2.5}}},
      {{{-20, 0.5}}, {{-20 * (1 + 0.9 * tol), 0.5}}},
      {{{-20, 0.5}}, {{-20 * (1 + 1.1 * tol), 0.5}}},
      {{{100, 0}, {1, 0}}, {{100, 0}, {1, 0.5 * tol * 100}}},
      {{{0, 0}}, {{0, 0}}},
      {{{1, 2}}, {{1, 2, 3}}},
  };
  const auto tensor = [](const Rows& rows) {
    std::vector<double> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    return at::tensor(flat, at::kDouble).reshape({static_cast<int64_t>(rows.size()), -1});
  };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [expected, logits] : examples) {
    const at::Tensor ids = at::zeros({static_cast<int64_t>(expected.size())}, at::kInt);
    out.push_back({{"expected", expected},
                   {"logits", logits},
                   {"agree", results_agree(ids, tensor(logits), ids, tensor(expected))}});
  }
  return out;
}

// The tags of every built-in family's models (Family::tagged_models), the folder names of the aoti
// engine's packages: what condbench.aoti's config_key (which names the folder of a --config it
// compiles) must reproduce. Each size in the family's order, as the tag writes them.
nlohmann::json config_tags() {
  nlohmann::json out = nlohmann::json::array();
  for (const Family* family : families())
    for (const Family::TaggedModel& m : family->tagged_models()) {
      nlohmann::json sizes = nlohmann::json::array();
      for (const auto& [key, value] : m.sizes) sizes.push_back({key, value});
      out.push_back({{"family", family->name()}, {"sizes", sizes}, {"tag", m.tag}});
    }
  return out;
}

nlohmann::json as_data(const Tolerances& t) {
  return {{"absolute_tolerance", t.absolute_tolerance},
          {"relative_tolerance", t.relative_tolerance},
          {"tie_margin", t.tie_margin}};
}

// Each family's sizes as condbench.aoti's --config names them, in the order of the family's tag
// (ModelConfig::tag; a decoder's DecoderConfig::step_tag, without the prompt and the tokens
// generated, which do not change its step), each with the most C++ accepts and its default.
nlohmann::json config_sizes() {
  const auto size = [](const std::string& key, int most, int fallback) {
    return nlohmann::json{{"size", key}, {"most", most}, {"default", fallback}};
  };
  nlohmann::json out = nlohmann::json::object();
  for (const Family* family : families()) {
    nlohmann::json sizes = nlohmann::json::array();
    for (const FamilyAxis& axis : family->axes())
      if (!axis.per_sequence) sizes.push_back(size(axis.key, axis.max, axis.fallback));
    if (const ModelFamily* model = family->per_inference()) {
      const ModelConfig defaults = model->config();
      sizes.push_back(size("num_classes", ModelConfig::kMaxClasses, defaults.num_classes));
      sizes.push_back(size("blocks", ModelConfig::kMaxBlocks, defaults.blocks));
    }
    out[family->name()] = sizes;
  }
  return out;
}

// How each family's sizes must relate (Family::relations), for --config:
// {"size": "heads", "must": "divide", "other": "d_model", "says": its statement}.
nlohmann::json config_relations() {
  nlohmann::json out = nlohmann::json::object();
  for (const Family* family : families()) {
    nlohmann::json list = nlohmann::json::array();
    for (const SizeRelation& r : family->relations())
      list.push_back({{"size", r.size}, {"must", r.must()}, {"other", r.other}, {"says", r.statement()}});
    out[family->name()] = list;
  }
  return out;
}

// The memory budget (memory_budget.h): its bytes, its words, and what each built-in family (the
// decoder one of them) holds for a batch beside its weights, as products of named sizes ("rows"
// the batch), for condbench.aoti --config, the decoder's save and the peer, which count the weights
// themselves (their modules' parameters, made on the meta device).
nlohmann::json memory_budget() {
  const auto as_list = [](const std::vector<MemoryTerm>& terms) {
    nlohmann::json list = nlohmann::json::array();
    for (const MemoryTerm& t : terms) list.push_back({{"what", t.what}, {"factors", t.factors}, {"times", t.times}});
    return list;
  };
  nlohmann::json terms = nlohmann::json::object();
  for (const Family* family : families()) terms[family->name()] = as_list(family->default_memory_terms());
  return {{"bytes", kMemoryBudgetBytes},
          {"bytes_per_float", kBytesPerFloat},
          {"says", memory_budget_statement()},
          {"terms", terms}};
}

}  // namespace

nlohmann::json rules_as_data() {
  nlohmann::json rules;
  rules["exit_rule"] = {{"score", "max_softmax"},  // TorchLayers::confidence unless a model file gives its own
                        {"fires_when", "score " + exit_comparison() + " threshold"}};
  rules["agreement"] = {{"relative_tolerance", kAgreementRelativeTolerance}, {"tie_margin", kTieMargin}};
  rules["agreement_examples"] = agreement_examples();
  rules["config_tags"] = config_tags();
  rules["config_sizes"] = config_sizes();
  rules["config_relations"] = config_relations();
  rules["model_file_agreement"] = as_data(kModelFileAgreement);
  // What condbench reads of a compiled folder (model_file_manifest.h): model_file.py's limits when
  // run by hand (condbench gives its own, the pool's row limit the smaller).
  rules["model_file_limits"] = {{"max_row_values", kModelFileMaxRowValues},
                                {"max_stages", kModelFileMaxStages},
                                {"max_classes", kModelFileMaxClasses}};
  rules["trace"] = {{"gpu_track", nvtx::kGpuTrack}};  // the --trace file's track of GPU spans
  rules["compile_check"] = as_data(kCompileCheck);
  rules["max_batch"] = kMaxBatch;
  rules["memory_budget"] = memory_budget();       // every tool's --batch limit: what an exported package accepts
  rules["context"] = {{"schema", kResultSchema},  // what the peer's file says of itself
                      {"strategy", kStrategyContext},
                      {"token_strategy_suffix", kTokenStrategySuffix},
                      {"per_token", kPerTokenContext},  // ... with per_token_families, as condbench writes it
                      {"per_token_families", per_token_family_names()},
                      {"peak_resident_memory", kPeakMemoryContext},
                      {"lockstep", kLockstepContext},
                      {"lockstep_allowance", kLockstepAllowanceContext}};
  rules["max_lockstep_allowance"] = kMaxLockstepAllowance;  // CONDBENCH_LOCKSTEP_ALLOWANCE's range: 1 to this
  return rules;
}

}  // namespace condbench
