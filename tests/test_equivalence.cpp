// Every CPU strategy against the plain reference forward: random configs, batches and thresholds,
// exact boundary cases, and row independence.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "condbench/random.h"
#include "condbench/strategy.h"
#include "reference.h"

namespace condbench::testing {
namespace {

constexpr double kLogitTolerance = 1e-5;
// Random thresholds keep this far from every row's confidence: float strategies and the double
// reference must not be asked to agree on a coin toss. Exact ties are tested on purpose below.
constexpr double kTieMargin = 1e-4;

bool near_any(const ReferenceResult& probe, int k, double t) {
  for (const auto& conf : probe.confidence)
    if (std::abs(conf[k] - t) < kTieMargin) return true;
  return false;
}

// A threshold between two neighbouring confidences of exit k, so some rows fire and some do not.
float splitting_threshold(const ReferenceResult& probe, int k, SplitMix64& rng) {
  std::vector<double> conf;
  for (const auto& c : probe.confidence) conf.push_back(c[k]);
  std::sort(conf.begin(), conf.end());
  for (int attempt = 0; attempt < 8 && conf.size() > 1; ++attempt) {
    const size_t i = static_cast<size_t>(rng.next() % (conf.size() - 1));
    if (conf[i + 1] - conf[i] > 2 * kTieMargin) return static_cast<float>(0.5 * (conf[i] + conf[i + 1]));
  }
  return 1.0f;
}

struct RandomCase {
  ModelConfig config = model_config("mlp");
  uint64_t seed;
  int64_t batch;
  std::vector<float> thresholds;
};

RandomCase draw_case(SplitMix64& rng, int index) {
  static const int kHidden[] = {1, 2, 3, 7, 16, 33, 64, 100, 128};
  RandomCase c;
  c.config.set("in_features", 1 + static_cast<int>(rng.next() % 40));
  c.config.set("hidden", kHidden[rng.next() % 9]);
  c.config.num_classes = 1 + static_cast<int>(rng.next() % 12);
  c.config.blocks = 1 + static_cast<int>(rng.next() % 6);
  c.seed = rng.next();
  const uint64_t size_class = rng.next() % 20;
  c.batch = size_class < 5    ? 1
            : size_class < 12 ? 2 + static_cast<int64_t>(rng.next() % 15)
                              : 17 + static_cast<int64_t>(rng.next() % 284);
  (void)index;
  return c;
}

// Four kinds of thresholds in turn: uniformly random, splitting the rows, forced (0 or 1), mixed.
std::vector<float> draw_thresholds(const RandomCase& c, const ReferenceResult& probe, SplitMix64& rng, int kind) {
  std::vector<float> t(c.config.blocks);
  for (int k = 0; k < c.config.blocks; ++k) {
    const int mode = kind == 3 ? static_cast<int>(rng.next() % 3) : kind;
    if (mode == 0) {
      do t[k] = rng.uniform();
      while (near_any(probe, k, t[k]));
    } else if (mode == 1) {
      t[k] = splitting_threshold(probe, k, rng);
    } else {
      t[k] = rng.next() % 3 == 0 ? 0.0f : 1.0f;
    }
  }
  return t;
}

// examples/strategy/host_if.cpp is linked into these tests (examples/CMakeLists.txt), so the
// loops over the registry below check it as they check condbench's own.
TEST(Equivalence, TheExampleStrategyIsAmongTheStrategiesChecked) {
  const auto strategies = strategies_on(Device::cpu);
  EXPECT_TRUE(std::any_of(strategies.begin(), strategies.end(),
                          [](const StrategyInfo* s) { return s->key() == "cpu/torch/host_if"; }));
}

TEST(Equivalence, EveryCpuStrategyMatchesTheReferenceOnRandomCases) {
  const auto strategies = strategies_on(Device::cpu);
  ASSERT_GE(strategies.size(), 3u);
  SplitMix64 rng(20261130);
  int cases_with_mixed_exits = 0;
  constexpr int kCases = 240;
  for (int i = 0; i < kCases; ++i) {
    RandomCase c = draw_case(rng, i);
    const EarlyExitModel model(c.config, c.seed);
    const FlatParameters params = model->flat_parameters();
    const at::Tensor x = seeded_input(c.config, c.batch, c.seed + 1);
    const ReferenceResult probe = reference_forward(c.config, params, x, std::vector<float>(c.config.blocks, 1.0f));
    c.thresholds = draw_thresholds(c, probe, rng, i % 4);
    const ReferenceResult ref = reference_forward(c.config, params, x, c.thresholds);
    if (std::set<int>(ref.exit_id.begin(), ref.exit_id.end()).size() > 1) ++cases_with_mixed_exits;

    for (const StrategyInfo* info : strategies) {
      if (info->unsupported(c.config, c.batch)) continue;  // aoti: no package for a random model
      SCOPED_TRACE("case " + std::to_string(i) + " " + info->key() + " " + c.config.describe() +
                   " batch=" + std::to_string(c.batch));
      auto strategy = info->make();
      strategy->prepare(model, c.batch);
      const ExitOutput out = strategy->run(x, c.thresholds);
      strategy->finish();
      ASSERT_TRUE(matches_reference(out, ref, kLogitTolerance));
    }
  }
  // The cases must exercise what matters: batches whose rows leave at different exits.
  EXPECT_GE(cases_with_mixed_exits, kCases / 4);
}

// The models whose AOTInductor packages the aoti_packages test compiles (tests/CMakeLists.txt):
// the default one and an odd one. Each aoti strategy against the reference on random inputs,
// batches and thresholds of every kind; cond one row at a time.
TEST(Equivalence, AotiStrategiesMatchTheReferenceOnTheirPackagedModels) {
  ModelConfig odd = model_config("mlp");
  odd.set("in_features", 7);
  odd.set("hidden", 33);
  odd.num_classes = 5;
  odd.blocks = 2;
  SplitMix64 rng(20261201);
  int compared = 0;
  for (const ModelConfig& config : {model_config("mlp"), odd})
    for (const StrategyInfo* info : strategies_on(Device::cpu)) {
      if (info->engine != Engine::aoti) continue;
      // A missing package here is a failure, not a skip: the test fixture compiled them.
      ASSERT_FALSE(info->unsupported(config, 1)) << info->key() << ": " << *info->unsupported(config, 1);
      for (int i = 0; i < 24; ++i) {
        RandomCase c;
        c.config = config;
        c.seed = rng.next();
        c.batch = info->unsupported(config, 2) ? 1 : 1 + static_cast<int64_t>(rng.next() % 100);
        const EarlyExitModel model(config, c.seed);
        const FlatParameters params = model->flat_parameters();
        const at::Tensor x = seeded_input(config, c.batch, c.seed + 1);
        const ReferenceResult probe = reference_forward(config, params, x, std::vector<float>(config.blocks, 1.0f));
        c.thresholds = draw_thresholds(c, probe, rng, i % 4);
        SCOPED_TRACE(info->key() + " " + config.describe() + " batch=" + std::to_string(c.batch) + " case " +
                     std::to_string(i));
        auto strategy = info->make();
        strategy->prepare(model, c.batch);
        const ExitOutput out = strategy->run(x, c.thresholds);
        strategy->finish();
        ASSERT_TRUE(matches_reference(out, reference_forward(config, params, x, c.thresholds), kLogitTolerance));
        ++compared;
      }
    }
  EXPECT_EQ(compared, 2 * 2 * 24);  // cond and masked, on both models
}

// Every CPU strategy that can run `config` at `batch` against the reference, with thresholds that
// split the rows at each exit.
void expect_every_cpu_strategy_matches(const ModelConfig& config, int64_t batch, uint64_t model_seed,
                                       uint64_t input_seed, SplitMix64& rng) {
  const EarlyExitModel model(config, model_seed);
  const FlatParameters params = model->flat_parameters();
  const at::Tensor x = seeded_input(config, batch, input_seed);
  const ReferenceResult probe = reference_forward(config, params, x, std::vector<float>(config.blocks, 1.0f));
  std::vector<float> thresholds;
  for (int k = 0; k < config.blocks; ++k) thresholds.push_back(splitting_threshold(probe, k, rng));
  const ReferenceResult ref = reference_forward(config, params, x, thresholds);
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    if (info->unsupported(config, batch)) continue;
    SCOPED_TRACE(info->key() + " " + config.describe() + " batch=" + std::to_string(batch));
    auto strategy = info->make();
    strategy->prepare(model, batch);
    ASSERT_TRUE(matches_reference(strategy->run(x, thresholds), ref, kLogitTolerance));
  }
}

// The sizes the benchmarks run and odd ones near them, where the CPU kernels take their wide
// paths (many panels, six-row groups and their remainders).
TEST(Equivalence, EveryCpuStrategyMatchesTheReferenceAtWideLayers) {
  SplitMix64 rng(1024);
  for (const int hidden : {100, 1000, 1024})
    for (const int64_t batch : {1, 7, 64}) {
      ModelConfig config = model_config("mlp");
      config.set("hidden", hidden);
      expect_every_cpu_strategy_matches(config, batch, static_cast<uint64_t>(hidden + batch), 17, rng);
    }
}

// More classes than one vector holds (two-vector heads, an exit test over several vectors) and
// narrow hidden layers: the random cases draw at most 12 classes.
TEST(Equivalence, EveryCpuStrategyMatchesTheReferenceWithManyClasses) {
  SplitMix64 rng(4096);
  for (const int classes : {17, 33, 100})
    for (const int hidden : {5, 64})
      for (const int64_t batch : {1, 9}) {
        ModelConfig config = model_config("mlp");
        config.set("hidden", hidden);
        config.num_classes = classes;
        expect_every_cpu_strategy_matches(config, batch, static_cast<uint64_t>(classes * hidden + batch), 29, rng);
      }
}

// With more than one intra-op thread, fused splits wide Linears across threads by panels: the
// same results, whichever thread computed which outputs.
TEST(Equivalence, FusedSplitAcrossThreadsMatchesTheReference) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  ModelConfig config = model_config("mlp");
  config.set("hidden", 1024);
  const EarlyExitModel model(config, 5);
  const FlatParameters params = model->flat_parameters();
  SplitMix64 rng(2);
  for (const int64_t batch : {1, 7, 64}) {
    SCOPED_TRACE("batch=" + std::to_string(batch));
    const at::Tensor x = seeded_input(config, batch, 23);
    const ReferenceResult probe = reference_forward(config, params, x, std::vector<float>(config.blocks, 1.0f));
    std::vector<float> thresholds;
    for (int k = 0; k < config.blocks; ++k) thresholds.push_back(splitting_threshold(probe, k, rng));
    auto fused = StrategyRegistry::instance().find<StrategyInfo>(Device::cpu, Engine::native, "fused")->make();
    fused->prepare(model, batch);
    EXPECT_TRUE(matches_reference(fused->run(x, thresholds), reference_forward(config, params, x, thresholds),
                                  kLogitTolerance));
  }
  at::set_num_threads(threads);
}

// An exit head with zero weights gives equal logits, so its confidence is exactly 1/num_classes
// in any arithmetic; a threshold equal to it must not fire (strict >), one just below must.
TEST(Equivalence, ConfidenceEqualToItsThresholdDoesNotFire) {
  for (int classes : {1, 4, 10}) {
    ModelConfig config = model_config("mlp");
    config.num_classes = classes;
    config.blocks = 3;
    EarlyExitModel model(config, 7);
    StateDict state = model->state_dict();
    for (auto& [name, tensor] : state)
      if (name.rfind("exit2.", 0) == 0) tensor.zero_();
    model->load_state_dict(state);
    const FlatParameters params = model->flat_parameters();
    const at::Tensor x = seeded_input(config, 5, 11);
    const float equal = 1.0f / static_cast<float>(classes);
    const float below = std::nextafter(equal, 0.0f);
    for (const float t2 : {equal, below}) {
      const std::vector<float> thresholds = {1.0f, t2, 1.0f};
      const ReferenceResult ref = reference_forward(config, params, x, thresholds);
      for (int id : ref.exit_id) ASSERT_EQ(id, t2 == equal ? 4 : 2) << "the reference itself";
      for (const StrategyInfo* info : strategies_on(Device::cpu)) {
        if (info->unsupported(config, 5)) continue;
        SCOPED_TRACE(info->key() + " classes=" + std::to_string(classes) + (t2 == equal ? " t=conf" : " t<conf"));
        auto strategy = info->make();
        strategy->prepare(model, 5);
        EXPECT_TRUE(matches_reference(strategy->run(x, thresholds), ref, kLogitTolerance));
      }
    }
  }
}

TEST(Equivalence, RowOfABatchGivesWhatTheRowGivesAlone) {
  ModelConfig config = model_config("mlp");
  const EarlyExitModel model(config, 3);
  const int64_t batch = 37;
  const at::Tensor x = seeded_input(config, batch, 5);
  const ReferenceResult probe =
      reference_forward(config, model->flat_parameters(), x, std::vector<float>(config.blocks, 1.0f));
  SplitMix64 rng(9);
  std::vector<float> thresholds;
  for (int k = 0; k < config.blocks; ++k) thresholds.push_back(splitting_threshold(probe, k, rng));
  for (const StrategyInfo* info : strategies_on(Device::cpu)) {
    if (info->unsupported(config, batch)) continue;  // aoti/cond: one row at a time
    SCOPED_TRACE(info->key());
    auto batched = info->make();
    batched->prepare(model, batch);
    const ExitOutput all = batched->run(x, thresholds);
    const at::Tensor ids = all.exit_id.clone(), logits = all.logits.clone();
    EXPECT_GT(std::set<int>(ids.data_ptr<int32_t>(), ids.data_ptr<int32_t>() + batch).size(), 1u);
    auto single = info->make();
    single->prepare(model, 1);
    for (int64_t r = 0; r < batch; ++r) {
      const ExitOutput one = single->run(x.narrow(0, r, 1).contiguous(), thresholds);
      ASSERT_EQ(one.exit_id.item<int32_t>(), ids[r].item<int32_t>()) << "row " << r;
      ASSERT_TRUE(at::allclose(one.logits[0], logits[r], kLogitTolerance, 1e-7)) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace condbench::testing
