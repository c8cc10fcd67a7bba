// The decoder family (docs/design.md §8): every CPU decoder strategy against the reference that
// recomputes each sequence without a cache (tests/reference.cpp), at batch 1, 4 and 16, with every
// token forced to each exit in turn and two calibrated mixes, on tokens, exit ids and logits; the
// reference's own sensitivity to the keys and values of skipped layers; the step counters; and the
// config's checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "condbench/decoder/strategy.h"
#include "condbench/error.h"
#include "reference.h"

namespace condbench::testing {
namespace {

// Float32 against double through the layers, relative to the largest logit of the step (at least 1).
constexpr double kLogitTolerance = 1e-4;
// A confidence this close to its threshold, or a runner-up logit this close to the top one, may
// go either way in float: the test then follows the strategy's choice from there on.
constexpr double kTieMargin = 1e-5;

DecoderConfig small_decoder() {
  DecoderConfig c;
  c.vocab = 29;
  c.d_model = 24;
  c.heads = 2;
  c.layers = 6;
  c.ffn = 40;
  c.context = 24;
  c.exit_every = 2;
  c.prompt = 5;
  c.generate = 10;
  return c;
}

// Five layers, an exit after every second: exits after layers 2 and 4, the final one after 5.
DecoderConfig odd_decoder() {
  DecoderConfig c = small_decoder();
  c.layers = 5;
  c.d_model = 12;
  c.heads = 3;
  c.vocab = 17;
  return c;
}

struct Case {
  std::string name;
  std::vector<float> thresholds;  // one per exit before the final one
};

// Thresholds that send every token to exit k: 0 below it (a confidence is positive), 1 (never
// exceeded) before it.
Case forced(const DecoderConfig& c, int k) {
  Case s{"exit:" + std::to_string(k), std::vector<float>(c.num_exits() - 1, 1.0f)};
  if (k < c.final_exit()) s.thresholds[k - 1] = 0.0f;
  return s;
}

at::Tensor prompt_tensor(const DecoderConfig& c, int64_t batch, uint64_t seed) {
  return at::tensor(seeded_prompts(c, batch, seed), at::kLong).reshape({batch, c.prompt});
}

std::vector<int64_t> prompt_row(const at::Tensor& prompts, int64_t r) {
  const at::Tensor row = prompts[r].contiguous();
  return {row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()};
}

// Every confidence the reference sees at each exit when no token leaves, over `batch` rows.
std::vector<std::vector<double>> confidences(const DecoderConfig& c, const FlatParameters& params,
                                             const at::Tensor& prompts) {
  std::vector<std::vector<double>> at_exit(c.num_exits() - 1);
  for (int64_t r = 0; r < prompts.size(0); ++r) {
    std::vector<int64_t> prompt = prompt_row(prompts, r);
    ReferenceDecoder ref(c, params, prompt);
    int64_t input = prompt.back();
    for (int t = 0; t < c.generate; ++t) {
      const DecoderReferenceStep step = ref.step(input, forced(c, c.final_exit()).thresholds);
      for (size_t e = 0; e < step.confidence.size(); ++e) at_exit[e].push_back(step.confidence[e]);
      input = step.token;
    }
  }
  return at_exit;
}

// A mix: each exit's threshold at quantile q of its confidences, so some tokens leave at each.
Case mix(const std::string& name, std::vector<std::vector<double>> at_exit, double q) {
  Case s{name, {}};
  for (std::vector<double>& conf : at_exit) {
    std::sort(conf.begin(), conf.end());
    const size_t i = std::min(conf.size() - 2, static_cast<size_t>(q * static_cast<double>(conf.size())));
    s.thresholds.push_back(static_cast<float>(0.5 * (conf[i] + conf[i + 1])));
  }
  return s;
}

std::vector<const DecoderStrategyInfo*> cpu_strategies() {
  std::vector<const DecoderStrategyInfo*> found;
  for (const DecoderStrategyInfo& info : decoder_strategies())
    if (info.device == Device::cpu) found.push_back(&info);
  return found;
}

// What a run did, for the scenario checks.
struct Seen {
  std::set<int> exits;
  int ties_followed = 0;
};

// Runs `info` on `batch` rows for a whole sequence, the reference stepping beside it with the same
// inputs (the reference's own tokens: teacher forcing), and compares every step. A divergence is
// a failure unless the reference's own numbers put it within a tie margin, in which case the
// reference takes the strategy's exit from there on.
Seen check(const DecoderStrategyInfo& info, const DecoderConfig& c, const FlatParameters& params, int64_t batch,
           const Case& scenario) {
  SCOPED_TRACE(info.key() + " " + scenario.name + " batch " + std::to_string(batch));
  const DecoderModel model{c, params};
  std::unique_ptr<DecoderStrategy> strategy = info.make();
  strategy->prepare(model, batch);
  const at::Tensor prompts = prompt_tensor(c, batch, 11);
  std::vector<ReferenceDecoder> refs;
  std::vector<int64_t> inputs;
  for (int64_t r = 0; r < batch; ++r) {
    refs.emplace_back(c, params, prompt_row(prompts, r));
    inputs.push_back(prompt_row(prompts, r).back());
  }
  Seen seen;
  // Twice: start() must empty whatever the previous sequence left.
  for (int sequence = 0; sequence < 2; ++sequence) {
    strategy->start(prompts);
    if (sequence == 1) {
      refs.clear();
      inputs.clear();
      for (int64_t r = 0; r < batch; ++r) {
        refs.emplace_back(c, params, prompt_row(prompts, r));
        inputs.push_back(prompt_row(prompts, r).back());
      }
    }
    for (int t = 0; t < c.generate; ++t) {
      const DecodeOutput& out = strategy->step(at::tensor(inputs, at::kLong), scenario.thresholds);
      strategy->finish();
      const DecodeCounters counters = strategy->counters();
      double heads = 0;
      for (int64_t r = 0; r < batch; ++r) {
        const int exit = out.exit_id[r].item<int>();
        const int64_t token = out.token[r].item<int64_t>();
        DecoderReferenceStep ref = refs[r].step(inputs[r], scenario.thresholds);
        if (exit != ref.exit) {
          const int at = std::min(exit, ref.exit);
          const bool tie = at < c.final_exit() && at <= static_cast<int>(ref.confidence.size()) &&
                           std::abs(ref.confidence[at - 1] - scenario.thresholds[at - 1]) < kTieMargin;
          EXPECT_TRUE(tie) << "step " << t << " row " << r << ": exit " << exit << ", the reference's " << ref.exit;
          if (!tie) return seen;
          refs[r].undo();
          ref = refs[r].step(inputs[r], scenario.thresholds, exit);
          ++seen.ties_followed;
        }
        seen.exits.insert(exit);
        heads += exit;
        double scale = 1.0;
        for (double v : ref.logits) scale = std::max(scale, std::abs(v));
        for (int v = 0; v < c.vocab; ++v) {
          const double got = out.logits[r][v].item<float>();
          EXPECT_NEAR(got, ref.logits[v], kLogitTolerance * scale) << "step " << t << " row " << r << " logit " << v;
          if (std::abs(got - ref.logits[v]) > kLogitTolerance * scale) return seen;
        }
        if (token != ref.token)
          EXPECT_GE(ref.logits[token], ref.logits[ref.token] - kTieMargin * scale)
              << "step " << t << " row " << r << ": token " << token << ", the reference's " << ref.token;
        inputs[r] = ref.token;
      }
      // Every row gets every layer's keys and values, in full or propagated; a row that leaves at
      // exit e evaluated heads 1..e.
      EXPECT_EQ(counters.layers_run + counters.layers_propagated, static_cast<double>(batch) * c.layers);
      if (info.computes_every_row) {
        EXPECT_EQ(counters.layers_run, static_cast<double>(batch) * c.layers);
        EXPECT_EQ(counters.heads_run, static_cast<double>(batch) * c.num_exits());
      } else {
        EXPECT_EQ(counters.heads_run, heads);
      }
      EXPECT_GT(counters.flops_executed, 0.0);
      EXPECT_GT(counters.bytes_read, 0.0);
      if (info.host_decides) EXPECT_GE(counters.host_syncs, 1.0);
    }
  }
  return seen;
}

class DecoderStrategies : public ::testing::TestWithParam<int64_t> {};

TEST_P(DecoderStrategies, MatchTheReferenceAtEveryForcedExitAndInMixes) {
  const int64_t batch = GetParam();
  const DecoderConfig c = small_decoder();
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  std::vector<Case> cases;
  for (int k = 1; k <= c.num_exits(); ++k) cases.push_back(forced(c, k));
  const std::vector<std::vector<double>> at_exit = confidences(c, params, prompt_tensor(c, 4, 11));
  cases.push_back(mix("mix:even", at_exit, 0.5));
  cases.push_back(mix("mix:late", at_exit, 0.8));
  ASSERT_FALSE(cpu_strategies().empty());
  for (const DecoderStrategyInfo* info : cpu_strategies())
    for (const Case& scenario : cases) {
      const Seen seen = check(*info, c, params, batch, scenario);
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
  const Case even = mix("mix:even", confidences(c, params, prompt_tensor(c, 4, 11)), 0.5);
  for (const DecoderStrategyInfo* info : cpu_strategies())
    for (const Case& scenario : {forced(c, 1), forced(c, 2), even}) check(*info, c, params, 4, scenario);
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
    EXPECT_GT(largest, 100 * kLogitTolerance) << "mistake " << static_cast<int>(wrong);
  }
}

TEST(DecoderStrategy, RefusesAStepBeforeStartAndPastTheContext) {
  DecoderConfig c = small_decoder();
  c.generate = c.context - c.prompt + 1;  // the last step reads the last position
  const FlatParameters params = seeded_decoder_parameters(c, 5);
  for (const DecoderStrategyInfo* info : cpu_strategies()) {
    std::unique_ptr<DecoderStrategy> strategy = info->make();
    strategy->prepare({c, params}, 1);
    const std::vector<float> never(c.num_exits() - 1, 1.0f);
    EXPECT_THROW(strategy->step(at::zeros({1}, at::kLong), never), Error) << info->key();
    strategy->start(prompt_tensor(c, 1, 3));
    for (int t = 0; t < c.generate; ++t) strategy->step(at::zeros({1}, at::kLong), never);
    EXPECT_THROW(strategy->step(at::zeros({1}, at::kLong), never), Error) << info->key();
  }
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

}  // namespace
}  // namespace condbench::testing
