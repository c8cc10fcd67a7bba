// The transformer family (docs/design.md §1): its LibTorch forward against the double-precision
// reference, state_dict I/O and its errors, every CPU strategy that runs it against the reference
// (batch 1 and batches whose rows leave at different exits), the ones that cannot saying why,
// counters and calibration.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "condbench/error.h"
#include "condbench/flops.h"
#include "condbench/model.h"
#include "condbench/workload.h"
#include "reference.h"

namespace condbench::testing {
namespace {

// Float32 through LayerNorm, attention and GELU against double: a few ulps of every operand,
// accumulated over the layers. Relative to max(|logit|, the head's sum of |w x| + |b|).
constexpr double kLogitTolerance = 2e-5;

ModelConfig small_transformer() {
  ModelConfig c = model_config("transformer");
  c.set("d_model", 32);
  c.set("heads", 4);
  c.set("ffn", 48);
  c.set("seq", 6);
  c.num_classes = 5;
  c.blocks = 3;
  return c;
}

// An odd one: three heads of width 4, d_model not a power of two, a single token.
ModelConfig odd_transformer() {
  ModelConfig c = model_config("transformer");
  c.set("d_model", 12);
  c.set("heads", 3);
  c.set("ffn", 20);
  c.set("seq", 1);
  c.num_classes = 3;
  c.blocks = 2;
  return c;
}

// Thresholds that split `rows` rows between every exit: the confidence quantiles of each head.
std::vector<float> splitting_thresholds(const ReferenceHeads& heads) {
  std::vector<float> t;
  for (int k = 0; k < heads.blocks; ++k) {
    std::vector<double> conf;
    for (const auto& row : heads.confidence) conf.push_back(row[k]);
    std::sort(conf.begin(), conf.end());
    // Between two neighbours above the median: about half the rows still active leave here.
    const size_t i = conf.size() * (k + 2) / (heads.blocks + 2);
    const size_t lo = std::min(i, conf.size() - 2);
    t.push_back(static_cast<float>(0.5 * (conf[lo] + conf[lo + 1])));
  }
  return t;
}

TEST(Transformer, ParameterNamesAreThoseOfTorchTransformerEncoderLayer) {
  const std::vector<ParameterSpec> specs = parameter_specs(small_transformer());
  std::vector<std::string> names;
  for (const ParameterSpec& s : specs) names.push_back(s.name);
  const std::vector<std::string> layer0(names.begin(), names.begin() + 12);
  EXPECT_EQ(layer0,
            (std::vector<std::string>{"layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias",
                                      "layers.0.self_attn.out_proj.weight", "layers.0.self_attn.out_proj.bias",
                                      "layers.0.linear1.weight", "layers.0.linear1.bias", "layers.0.linear2.weight",
                                      "layers.0.linear2.bias", "layers.0.norm1.weight", "layers.0.norm1.bias",
                                      "layers.0.norm2.weight", "layers.0.norm2.bias"}));
  EXPECT_EQ(names[36], "exit1.norm.weight");
  EXPECT_EQ(names[39], "exit1.proj.bias");
  EXPECT_EQ(names.back(), "final.proj.bias");
  EXPECT_EQ(specs.size(), 12u * 3 + 4u * 4);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{96, 32}));  // in_proj: q, k, v stacked
  // The module's own names are the specs', so a state_dict saved from PyTorch loads unchanged.
  const EarlyExitModel model(small_transformer(), 3);
  std::set<std::string> registered;
  for (const auto& item : model->named_parameters()) registered.insert(item.key());
  EXPECT_EQ(registered, std::set<std::string>(names.begin(), names.end()));
}

TEST(Transformer, ForwardMatchesTheDoublePrecisionReference) {
  for (const ModelConfig& config : {small_transformer(), odd_transformer(), model_config("transformer")}) {
    SCOPED_TRACE(config.describe());
    const EarlyExitModel model(config, 11);
    const int64_t rows = config.size("d_model") >= 256 ? 2 : 9;  // the default size costs ~0.3 s a row here
    const at::Tensor x = seeded_input(config, rows, 12);
    const ReferenceHeads heads = reference_heads(config, model->flat_parameters(), x);
    const at::Tensor confidence = model->exit_confidences(x);
    ASSERT_EQ(confidence.sizes(), (std::vector<int64_t>{rows, config.blocks}));
    for (int64_t r = 0; r < rows; ++r)
      for (int k = 0; k < config.blocks; ++k)
        EXPECT_NEAR(confidence[r][k].item<double>(), heads.confidence[r][k], 1e-5) << "row " << r << " exit " << k + 1;
    // Every head, including the final one, through the neutral interface.
    const auto layers = model->layers(at::kCPU);
    at::Tensor h = x;
    for (int k = 0; k <= config.blocks; ++k) {
      if (k < config.blocks) h = layers->block(k, h);
      const at::Tensor logits = layers->head(k, h);
      for (int64_t r = 0; r < rows; ++r)
        for (int c = 0; c < config.num_classes; ++c) {
          const double want = heads.logits[r][k][c];
          EXPECT_NEAR(logits[r][c].item<double>(), want,
                      kLogitTolerance * std::max(std::abs(want), heads.magnitude[r][k][c]))
              << "row " << r << " head " << k << " class " << c;
        }
    }
  }
}

TEST(Transformer, EveryCpuStrategyThatRunsItMatchesTheReference) {
  int ran = 0;
  for (const ModelConfig& config : {small_transformer(), odd_transformer()}) {
    const EarlyExitModel model(config, 5);
    for (const int64_t batch : {int64_t{1}, int64_t{13}}) {
      const at::Tensor x = seeded_input(config, batch, 6);
      const ReferenceHeads heads = reference_heads(config, model->flat_parameters(), x);
      // Forced exits at every depth, and thresholds that spread a batch over every exit.
      std::vector<std::vector<float>> cases;
      for (int e = 1; e <= config.final_exit(); ++e) cases.push_back(forced_thresholds(config.blocks, e));
      if (batch > 1) cases.push_back(splitting_thresholds(heads));
      for (const StrategyInfo* info : strategies_on(Device::cpu)) {
        SCOPED_TRACE(info->key() + " " + config.describe() + " batch=" + std::to_string(batch));
        if (const Unsupported why = info->unsupported(config, batch)) {
          // Only strategies whose arithmetic is the MLP's own may refuse, and they say so.
          EXPECT_TRUE(info->engine != Engine::torch) << *why;
          EXPECT_FALSE(why->empty());
          continue;
        }
        auto strategy = info->make();
        strategy->prepare(model, batch);
        for (const std::vector<float>& thresholds : cases) {
          const ReferenceResult ref = pick_exits(heads, thresholds);
          const ExitOutput out = strategy->run(x, thresholds);
          strategy->finish();
          ASSERT_TRUE(matches_reference(out, ref, kLogitTolerance));
        }
        ++ran;
      }
      if (batch > 1) {  // the spread case must leave rows at more than one exit
        const ReferenceResult spread = pick_exits(heads, cases.back());
        EXPECT_GT(std::set<int>(spread.exit_id.begin(), spread.exit_id.end()).size(), 1u);
      }
    }
  }
  EXPECT_GE(ran, 2 * 2 * 2);  // eager_host and masked, two configs, two batches
}

// The aoti strategies run the transformer from its package (the test fixture compiled the small
// transformer's: python/condbench/aoti.py
// --config=transformer:d_model=32,heads=4,ffn=48,seq=6,num_classes=5,blocks=3), the model's
// weights loaded into it; cond one row at a time.
TEST(Transformer, AotiStrategiesMatchTheReferenceOnThePackagedModel) {
  const ModelConfig config = small_transformer();
  int compared = 0;
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    if (info->engine != Engine::aoti) continue;
    // A missing package here is a failure, not a skip: the test fixture compiled it.
    ASSERT_FALSE(info->unsupported(config, 1)) << info->key() << ": " << *info->unsupported(config, 1);
    const int64_t batch = info->unsupported(config, 2) ? 1 : 11;
    for (const uint64_t seed : {31u, 32u}) {  // two sets of weights through one package
      const EarlyExitModel model(config, seed);
      const at::Tensor x = seeded_input(config, batch, seed + 1);
      const ReferenceHeads heads = reference_heads(config, model->flat_parameters(), x);
      std::vector<std::vector<float>> cases{forced_thresholds(config.blocks, 1),
                                            forced_thresholds(config.blocks, config.final_exit())};
      if (batch > 1) cases.push_back(splitting_thresholds(heads));
      auto strategy = info->make();
      strategy->prepare(model, batch);
      for (const std::vector<float>& thresholds : cases) {
        SCOPED_TRACE(info->key() + " seed " + std::to_string(seed));
        const ExitOutput out = strategy->run(x, thresholds);
        strategy->finish();
        ASSERT_TRUE(matches_reference(out, pick_exits(heads, thresholds), kLogitTolerance));
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 + 2 * 3);  // cond: two forced cases; masked: and a spread batch
}

TEST(Transformer, NativeStrategiesSayTheyRunTheMlpOnly) {
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    if (info->engine != Engine::native) continue;
    const Unsupported why = info->unsupported(small_transformer(), 1);
    ASSERT_TRUE(why.has_value()) << info->key();
    EXPECT_NE(why->find("mlp"), std::string::npos) << *why;
  }
}

TEST(Transformer, StateDictRoundTripsAndItsConfigIsReadBack) {
  const ModelConfig config = small_transformer();
  const EarlyExitModel a(config, 21);
  const StateDict saved = a->state_dict();
  const ModelConfig read = infer_config(saved, {{"heads", config.size("heads")}});
  EXPECT_EQ(read.family, &model_family("transformer"));
  EXPECT_EQ(read.size("d_model"), config.size("d_model"));
  EXPECT_EQ(read.size("ffn"), config.size("ffn"));
  EXPECT_EQ(read.blocks, config.blocks);
  EXPECT_EQ(read.num_classes, config.num_classes);
  read.validate();
  ModelConfig with_seq = read;
  with_seq.set("seq", config.size("seq"));
  const EarlyExitModel b(with_seq, saved);
  const at::Tensor x = seeded_input(config, 4, 1);
  EXPECT_TRUE(at::equal(a->exit_confidences(x), b->exit_confidences(x)));
  // Heads that do not divide d_model: one line naming both.
  try {
    infer_config(saved, {{"heads", 5}});
    FAIL() << "5 heads accepted for d_model 32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heads must divide d_model"), std::string::npos) << e.what();
  }
}

TEST(Transformer, StateDictErrorsNameTheKey) {
  const ModelConfig config = small_transformer();
  const StateDict good = EarlyExitModel(config, 1)->state_dict();
  auto error_of = [&](const StateDict& sd) -> std::string {
    try {
      EarlyExitModel(config, sd);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  StateDict missing = good;
  missing.erase(missing.begin() + 3);  // layers.0.self_attn.out_proj.bias
  EXPECT_NE(error_of(missing).find("missing key 'layers.0.self_attn.out_proj.bias'"), std::string::npos)
      << error_of(missing);
  StateDict reshaped = good;
  reshaped[0].second = at::zeros({32, 32});
  EXPECT_NE(error_of(reshaped).find("'layers.0.self_attn.in_proj_weight' has shape [32, 32], expected [96, 32]"),
            std::string::npos)
      << error_of(reshaped);
  StateDict extra = good;
  extra.emplace_back("layers.0.self_attn.bias_k", at::zeros({1, 1, 32}));  // add_bias_kv=True
  EXPECT_NE(error_of(extra).find("unexpected key 'layers.0.self_attn.bias_k'"), std::string::npos) << error_of(extra);
  StateDict wrapped;
  for (const auto& [name, t] : good) wrapped.emplace_back("module." + name, t);
  EXPECT_NE(error_of(wrapped).find("every key starts with 'module.'"), std::string::npos) << error_of(wrapped);
}

TEST(Transformer, CountersFollowTheRowsThatRan) {
  const ModelConfig config = small_transformer();
  const EarlyExitModel model(config, 8);
  const int64_t batch = 13;
  const at::Tensor x = seeded_input(config, batch, 9);
  const ReferenceHeads heads = reference_heads(config, model->flat_parameters(), x);
  const std::vector<float> thresholds = splitting_thresholds(heads);
  const ReferenceResult ref = pick_exits(heads, thresholds);
  double useful = 0;
  for (int id : ref.exit_id) useful += useful_flops(config, id);
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    if (info->engine != Engine::torch) continue;
    SCOPED_TRACE(info->key());
    auto strategy = info->make();
    strategy->prepare(model, batch);
    strategy->run(x, thresholds);
    strategy->finish();
    const Strategy::Observed observed = strategy->observed_run(x, thresholds);
    ASSERT_TRUE(matches_reference(observed.output, ref, kLogitTolerance));
    const InferenceCounters& c = observed.counters;
    if (info->name == "masked") {
      EXPECT_DOUBLE_EQ(c.flops_executed, batch * full_model_flops(config));
      EXPECT_DOUBLE_EQ(c.bytes_read, full_model_bytes(config) + x.numel() * 4.0);
    } else if (info->name == "eager_host") {  // compacted rows, so the work done is the work needed
      EXPECT_DOUBLE_EQ(c.flops_executed, useful);
    } else {  // another torch strategy (the example host_if): between the work needed and all of it
      EXPECT_GE(c.flops_executed, useful);
      EXPECT_LE(c.flops_executed, batch * full_model_flops(config));
    }
  }
  // The family's FLOPs: projections and FFN per token, attention per token pair.
  const double s = config.size("seq"), d = config.size("d_model"), f = config.size("ffn");
  EXPECT_DOUBLE_EQ(block_flops(config, 0), 2 * s * (4 * d * d + 2 * d * f) + 4 * s * s * d);
  EXPECT_DOUBLE_EQ(head_flops(config, 0), 2 * d * config.num_classes);
  EXPECT_DOUBLE_EQ(block_bytes(config, 0), 4 * (4 * d * d + 2 * d * f + 9 * d + f));
}

TEST(Transformer, CalibrationHitsTheTargetShares) {
  ModelSource source;
  source.config = small_transformer();
  const Workload workload(EarlyExitModel(source.config, source.seed), 1);
  EXPECT_EQ(workload.pool().sizes(), (std::vector<int64_t>{kMinPoolRows, 6, 32}));
  const std::vector<float> thresholds = workload.thresholds(Scenario::mix("uniform"));
  const ReferenceHeads heads = reference_heads(source.config, workload.model()->flat_parameters(), workload.pool());
  const ReferenceResult ref = pick_exits(heads, thresholds);
  std::vector<int> count(source.config.final_exit() + 1);
  for (int id : ref.exit_id) ++count[id];
  for (int e = 1; e <= source.config.final_exit(); ++e)
    EXPECT_NEAR(count[e], static_cast<double>(kMinPoolRows) / source.config.final_exit(), kMinPoolRows / 20.0)
        << "exit " << e;
}

}  // namespace
}  // namespace condbench::testing
