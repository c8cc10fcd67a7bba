// The decoder family (docs/design.md §8): every CPU decoder strategy against the reference that
// recomputes each sequence without a cache (tests/reference.cpp), at batch 1, 4 and 16, with every
// token forced to each exit in turn and two calibrated mixes, on tokens, exit ids and logits; the
// reference's own sensitivity to the keys and values of skipped layers; the step counters; the
// config's checks; and the one registry that holds the decoder's strategies beside the families'.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "condbench/decoder/strategy.h"
#include "condbench/decoder/torch_decoder.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "decoder/torch/conditional_step.h"
#include "decoder/torch/masked_step.h"
#include "decoder_check.h"

namespace condbench::testing {
namespace {

class DecoderStrategies : public ::testing::TestWithParam<int64_t> {};

// A decoder strategy and a family's of one name, device and engine are two entries of the one
// registry, told apart by their unit: each found as its kind, each described by its own context key,
// and a second entry of a (unit, device, engine, name) refused, naming it.
TEST(StrategyRegistry, KeysEveryUnitsStrategiesByUnitDeviceEngineAndName) {
  const StrategyRegistry& linked = StrategyRegistry::instance();
  const StrategyInfo* inference = linked.find<StrategyInfo>(Device::cpu, Engine::torch, "masked");
  const DecoderStrategyInfo* token = linked.find<DecoderStrategyInfo>(Device::cpu, Engine::torch, "masked");
  ASSERT_NE(inference, nullptr);
  ASSERT_NE(token, nullptr);
  EXPECT_NE(static_cast<const StrategyEntry*>(inference), static_cast<const StrategyEntry*>(token));
  EXPECT_EQ(inference->context_key(), "strategy:cpu/torch/masked");
  EXPECT_EQ(token->context_key(), "strategy:cpu/torch/masked per token");
  // What each declares, read from its class's statics by the one macro.
  EXPECT_EQ(token->declares, std::vector<std::string>{"runs every layer for every row"});
  EXPECT_EQ(linked.find<DecoderStrategyInfo>(Device::cpu, Engine::torch, "eager_host")->declares,
            std::vector<std::string>{"decides on the host"});
  EXPECT_EQ(linked.find<DecoderStrategyInfo>(Device::cpu, Engine::native, "graph_cond"), nullptr);

  // Every entry is one kind's, listed inference first, each in key order.
  EXPECT_EQ(linked.of<StrategyInfo>().size() + linked.of<DecoderStrategyInfo>().size(), linked.all().size());
  for (size_t i = 1; i < linked.all().size(); ++i) {
    const StrategyEntry& a = *linked.all()[i - 1];
    const StrategyEntry& b = *linked.all()[i];
    EXPECT_TRUE(a.unit < b.unit || (a.unit == b.unit && a.key() < b.key()))
        << a.context_key() << ", " << b.context_key();
  }

  StrategyRegistry registry;
  const auto entry = [](auto kind) {
    auto info = std::make_unique<decltype(kind)>();
    info->name = "masked";
    return info;
  };
  EXPECT_TRUE(registry.add(entry(StrategyInfo{})));
  EXPECT_TRUE(registry.add(entry(DecoderStrategyInfo{})));
  try {
    registry.add(entry(DecoderStrategyInfo{}));
    ADD_FAILURE() << "a second cpu/torch/masked per token was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "strategy:cpu/torch/masked per token is registered twice");
  }
  EXPECT_EQ(registry.all().size(), 2U);
}

TEST_P(DecoderStrategies, MatchTheReferenceAtEveryForcedExitAndInMixes) {
  const int64_t batch = GetParam();
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  const std::vector<DecoderCase> cases = decoder_cases(c, params);
  ASSERT_FALSE(decoder_strategies_on(Device::cpu).empty());
  for (const DecoderStrategyInfo* info : decoder_strategies_on(Device::cpu))
    for (const DecoderCase& scenario : cases) {
      const DecoderSeen seen = check_decoder(*info, c, params, batch, scenario);
      if (!seen.ran) continue;
      if (scenario.name.starts_with("exit:")) {
        EXPECT_EQ(seen.exits, std::set<int>{std::stoi(scenario.name.substr(5))}) << info->key() << " " << scenario.name;
      } else if (batch > 1) {
        // A mix that sent every token to one exit would test nothing a forced exit does not.
        EXPECT_GE(seen.exits.size(), 2u) << info->key() << " " << scenario.name;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Batches, DecoderStrategies, ::testing::Values(1, 4, 16),
                         [](const auto& p) { return "batch" + std::to_string(p.param); });

TEST(DecoderStrategy, MatchesTheReferenceWhenTheLastSegmentIsShorter) {
  const DecoderConfig c = odd_decoder();
  ASSERT_EQ(c.num_exits(), 3);
  ASSERT_EQ(c.exit_layer(2), 4);
  ASSERT_EQ(c.exit_layer(3), 5);
  const FlatParameters params = seeded_decoder_parameters(c, 9);
  for (const DecoderStrategyInfo* info : decoder_strategies_on(Device::cpu))
    for (const int64_t batch : {1, 4, 16})
      for (const DecoderCase& scenario : decoder_cases(c, params)) check_decoder(*info, c, params, batch, scenario);
}

// The check above can tell right keys and values of skipped layers from the two likely mistakes:
// leaving them zero, or running the skipped layers in full. Only a token that goes deeper than an
// earlier one reads them: two tokens leave at exit 1, the next two run every layer, and the
// reference with either mistake gives those two other logits than the right one.
TEST(DecoderReference, TellsPropagatedKeysAndValuesFromZeroOrFullLayers) {
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  const std::vector<int64_t> prompt = seeded_prompts(c, 1, 11);
  for (auto wrong : {ReferenceDecoder::Skipped::zero, ReferenceDecoder::Skipped::computed_in_full}) {
    ReferenceDecoder right(c, params, prompt), mistaken(c, params, prompt, wrong);
    int64_t input = prompt.back();
    double largest = 0.0;
    for (int t = 0; t < 4; ++t) {
      const int exit = t < 2 ? 1 : c.final_exit();
      const DecoderReferenceStep a = right.step(input, {}, exit), b = mistaken.step(input, {}, exit);
      if (t < 2) EXPECT_EQ(a.logits, b.logits);  // nothing skipped is read yet
      for (int v = 0; v < c.vocab; ++v) largest = std::max(largest, std::abs(a.logits[v] - b.logits[v]));
      input = a.token;
    }
    // 100 times the strategies' tolerance: no strategy with the mistake could pass.
    EXPECT_GT(largest, 100 * kDecoderLogitTolerance) << "mistake " << static_cast<int>(wrong);
  }
}

TEST(DecoderStrategy, RefusesAStepBeforeStartAndPastTheContext) {
  DecoderConfig c = small_decoder();
  c.generate = c.context - c.prompt + 1;  // the last step reads the last position
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  for (const DecoderStrategyInfo* info : decoder_strategies_on(Device::cpu)) {
    std::unique_ptr<DecoderStrategy> strategy = info->make();
    strategy->prepare({c, params}, 1);
    const std::vector<float> never(c.num_exits() - 1, 1.0f);
    EXPECT_THROW(strategy->step(at::zeros({1}, at::kLong), never), Error) << info->key();
    strategy->start(decoder_prompts(c, 1, 3));
    for (int t = 0; t < c.generate; ++t) strategy->step(at::zeros({1}, at::kLong), never);
    EXPECT_THROW(strategy->step(at::zeros({1}, at::kLong), never), Error) << info->key();
  }
}

// graph_cond's and graph_while's steps (CUDA: an IF-ELSE node at each exit, or WHILE loops over the
// exits with a SWITCH on the next) with their branches decided on the host instead: the same fixed-size steps, the same
// in-place outputs and device-side counts, so the CPU checks what the graphs will compute. Not
// registered: they are no strategies of their own.
template <bool kLoop>
class HostDecidedStep final : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    decoder_ = std::make_unique<TorchDecoder>(model, at::Device(at::kCPU));
    cache_ = decoder_->make_cache(batch);
    state_.allocate(model.config, batch, at::Device(at::kCPU));
  }
  void do_start(const at::Tensor& prompt) override {
    cache_ = decoder_->make_cache(prompt.size(0));
    decoder_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  }
  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    const at::Tensor where = at::full({1}, position, at::kLong), visible = decoder_->visible_through(where);
    const StepParts parts{[&](int l, const at::Tensor& h) { return decoder_->layer_at(l, h, cache_, where, visible); },
                          [&](int l, const at::Tensor& h) { decoder_->propagate_at(l, h, cache_, where); },
                          [&](int exit) { return at::scalar_tensor(thresholds[exit - 1]); }};
    const at::Tensor h = decoder_->embed_at(input, where);
    if constexpr (kLoop) {
      int passes = 0;
      // A SWITCH: the case the index names, none outside [0, cases) (the graph's node does the same).
      const auto pick = [](const at::Tensor& index, int /*depth*/, int cases, const auto& body) {
        const int i = index.item<int>();
        if (i >= 0 && i < cases) body(i);
      };
      loop_step(*decoder_, h, state_, parts, pick, [&](const at::Tensor& predicate, int /*depth*/, const auto& body) {
        // Each loop runs at most once per exit: a predicate that never falls would hang the graph.
        for (; predicate.item<bool>(); ++passes) {
          if (passes == config().num_exits()) throw std::logic_error("the step's loops ran past the exits");
          body();
        }
      });
    } else {
      conditional_step(*decoder_, h, state_, parts,
                       [](const at::Tensor& predicate, int /*depth*/, const auto& then, const auto& otherwise) {
                         if (predicate.item<bool>())
                           then();
                         else
                           otherwise();
                       });
    }
    output_ = {state_.logits.argmax(-1), state_.exit_id.clone(), state_.logits.clone()};
    return output_;
  }
  bool launches_are_aten_calls() const override { return true; }
  void do_read_device_counters(TokenCounters& counted) const override {
    const double b = static_cast<double>(state_.left.size(0));
    counted.layers_run = b * state_.ran[0].item<int>();
    counted.layers_propagated = b * config().layers - counted.layers_run;
    counted.heads_run = b * state_.ran[1].item<int>();
    counted.flops_executed = counted.bytes_read = 1;  // the CUDA strategy's formulas are not what this checks
  }

 private:
  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  ConditionalStepState state_;
  TokenOutput output_;
};

template <bool kLoop>
void check_host_decided_step(const std::string& name) {
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  DecoderStrategyInfo info;
  info.name = name;
  info.summary = name + ", decided on the host";
  info.make = [] { return std::make_unique<HostDecidedStep<kLoop>>(Device::cpu); };
  info.supports = &DecoderStrategy::supports;
  info.skips_when_all_left = true;
  for (const int64_t batch : {1, 4, 16})
    for (const DecoderCase& scenario : decoder_cases(c, params)) check_decoder(info, c, params, batch, scenario);
  const DecoderConfig odd = odd_decoder();
  const FlatParameters odd_params = seeded_decoder_parameters(odd, 9);
  for (const int64_t batch : {1, 4, 16})
    for (const DecoderCase& scenario : decoder_cases(odd, odd_params))
      check_decoder(info, odd, odd_params, batch, scenario);
}

TEST(DecoderConditionalStep, MatchesTheReferenceWithItsBranchesDecidedOnTheHost) {
  check_host_decided_step<false>("graph_cond_step");
}

TEST(DecoderLoopStep, MatchesTheReferenceWithItsLoopsDecidedOnTheHost) {
  check_host_decided_step<true>("graph_while_step");
}

// masked_graph's step (CUDA) runs over fixed-size tensors: the position a tensor, the keys and
// values written by index_copy_, attention over the whole cache through a mask. Run eagerly here,
// it gives masked's tokens, exits, logits and cache at every position of a mixed sequence.
TEST(DecoderStaticStep, MatchesTheShapedStepAtEveryPosition) {
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  const TorchDecoder decoder({c, params}, at::Device(at::kCPU));
  const int64_t batch = 4;
  KvCache shaped = decoder.make_cache(batch), fixed = decoder.make_cache(batch);
  const at::Tensor prompts = decoder_prompts(c, batch, 11);
  decoder.prefill(prompts.narrow(1, 0, c.prompt - 1), shaped);
  decoder.prefill(prompts.narrow(1, 0, c.prompt - 1), fixed);
  const std::vector<float> t = decoder_mix("mix", decoder_confidences(c, params, prompts), 0.5).thresholds;
  at::Tensor input = prompts.select(1, c.prompt - 1).contiguous();
  std::set<int> exits;
  for (int step = 0; step < c.generate; ++step) {
    const int position = c.step_position(step);
    const TokenOutput a = masked_step(
        decoder, decoder.embed(input, position),
        [&](int l, const at::Tensor& h) { return decoder.layer(l, h, shaped, {}, position); },
        [&](int exit) { return t[exit - 1]; });
    const at::Tensor where = at::full({1}, position, at::kLong);
    const at::Tensor visible = decoder.visible_through(where);
    const TokenOutput b = masked_step(
        decoder, decoder.embed_at(input, where),
        [&](int l, const at::Tensor& h) { return decoder.layer_at(l, h, fixed, where, visible); },
        [&](int exit) { return at::scalar_tensor(t[exit - 1]); });
    EXPECT_TRUE(at::equal(a.token, b.token)) << "step " << step;
    EXPECT_TRUE(at::equal(a.exit_id, b.exit_id)) << "step " << step;
    EXPECT_TRUE(at::allclose(a.logits, b.logits, 1e-5, 1e-5))
        << "step " << step << ": " << (a.logits - b.logits).abs().max().item<float>();
    for (int64_t r = 0; r < batch; ++r) exits.insert(a.exit_id[r].item<int>());
    input = a.token;
  }
  for (int l = 0; l < c.layers; ++l) {
    EXPECT_TRUE(at::allclose(shaped.k[l], fixed.k[l], 1e-5, 1e-5)) << "layer " << l;
    EXPECT_TRUE(at::allclose(shaped.v[l], fixed.v[l], 1e-5, 1e-5)) << "layer " << l;
  }
  EXPECT_GE(exits.size(), 2u);
}

TEST(DecoderConfig, ChecksItsSizes) {
  DecoderConfig c;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.num_exits(), 4);  // after layers 2, 4 and 6, and the final one after 8
  EXPECT_EQ(c.exit_layer(1), 2);
  EXPECT_EQ(c.exit_layer(4), 8);
  c.heads = 3;
  EXPECT_THROW(c.validate(), Error);
  c = DecoderConfig{};
  c.generate = c.context - c.prompt + 2;
  EXPECT_THROW(c.validate(), Error);
  c = DecoderConfig{};
  c.d_model = 0;
  EXPECT_THROW(c.validate(), Error);
  c = DecoderConfig{};
  c.vocab = 1 << 30;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_EQ(DecoderConfig{}.describe(),
            "vocab=512 d_model=256 heads=4 layers=8 ffn=1024 context=64 exit_every=2 prompt=16 generate=32");
}

// The decoder is a family of the other timed unit: families() lists every ModelFamily, then it,
// each once; it has no inference members, and asking for it as one names why.
TEST(DecoderConfig, TheDecoderIsAFamilyTimedPerToken) {
  const std::vector<const Family*>& all = families();
  ASSERT_EQ(all.size(), model_families().size() + 1);
  for (size_t i = 0; i < model_families().size(); ++i) {
    EXPECT_EQ(all[i], model_families()[i]);
    EXPECT_EQ(all[i]->unit(), TimedUnit::inference);
    EXPECT_EQ(all[i]->per_inference(), model_families()[i]);
  }
  EXPECT_EQ(all.back(), &decoder_family());
  EXPECT_EQ(&family(kDecoderFamily), &decoder_family());
  EXPECT_EQ(decoder_family().unit(), TimedUnit::token);
  EXPECT_EQ(decoder_family().per_inference(), nullptr);
  EXPECT_NE(decoder_family().axis("exit_every"), nullptr);
  EXPECT_EQ(decoder_family().axis("blocks"), nullptr);
  EXPECT_EQ(decoder_family().runs_batches(false), (std::vector<int64_t>{1, 8}));
  try {
    static_cast<void>(model_family(kDecoderFamily));
    ADD_FAILURE() << "the decoder was read as a family timed per inference";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the decoder is timed per token, not per inference");
  }
  try {
    static_cast<void>(family("rnn"));
    ADD_FAILURE() << "an unknown family was found";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown model family 'rnn' (" + family_names() + ")");
    EXPECT_NE(family_names().find(kDecoderFamily), std::string::npos);
  }
}

// The decoder's sizes are FamilyAxis rows, as every family's: each key reaches its own field (a
// table that mapped two keys to one field would fail here), its default is the config's, and
// only what a sequence is stays out of the compiled step's name.
TEST(DecoderConfig, ItsSizesAreFamilyAxesEachReachingItsOwnField) {
  DecoderConfig c;
  std::set<std::string> keys;
  int value = 100;
  for (const FamilyAxis& axis : decoder_family().axes()) {
    EXPECT_TRUE(keys.insert(axis.key).second) << axis.key;
    EXPECT_EQ(axis.fallback, DecoderConfig{}.size(axis.key)) << axis.key;
    c.set(axis.key, ++value);
  }
  value = 100;
  for (const FamilyAxis& axis : decoder_family().axes()) EXPECT_EQ(c.size(axis.key), ++value) << axis.key;
  EXPECT_EQ(c.vocab, 101);
  EXPECT_EQ(c.generate, 109);
  EXPECT_EQ(DecoderConfig{}.step_tag(), "decoder-vocab512-d_model256-heads4-layers8-ffn1024-context64-exit_every2");
  try {
    static_cast<void>(c.size("blocks"));
    ADD_FAILURE() << "an unknown size was read";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the decoder has no size 'blocks'");
  }
}

}  // namespace
}  // namespace condbench::testing
