#include "decoder_check.h"

#include <algorithm>
#include <cmath>

#include "condbench/torch_device.h"

namespace condbench::testing {
namespace {

std::vector<int64_t> prompt_row(const at::Tensor& prompts, int64_t r) {
  const at::Tensor row = prompts[r].contiguous();
  return {row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()};
}

}  // namespace

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

// Thresholds that send every token to exit k: 0 below it (a confidence is positive), 1 (never
// exceeded) before it.
DecoderCase forced_decoder_case(const DecoderConfig& c, int k) {
  DecoderCase s{"exit:" + std::to_string(k), std::vector<float>(c.num_exits() - 1, 1.0f)};
  if (k < c.final_exit()) s.thresholds[k - 1] = 0.0f;
  return s;
}

at::Tensor decoder_prompts(const DecoderConfig& c, int64_t batch, uint64_t seed) {
  return at::tensor(seeded_prompts(c, batch, seed), at::kLong).reshape({batch, c.prompt});
}

// Every confidence the reference sees at each exit when no token leaves, over `batch` rows.
std::vector<std::vector<double>> decoder_confidences(const DecoderConfig& c, const FlatParameters& params,
                                                     const at::Tensor& prompts) {
  std::vector<std::vector<double>> at_exit(c.num_exits() - 1);
  for (int64_t r = 0; r < prompts.size(0); ++r) {
    std::vector<int64_t> prompt = prompt_row(prompts, r);
    ReferenceDecoder ref(c, params, prompt);
    int64_t input = prompt.back();
    for (int t = 0; t < c.generate; ++t) {
      const DecoderReferenceStep step = ref.step(input, forced_decoder_case(c, c.final_exit()).thresholds);
      for (size_t e = 0; e < step.confidence.size(); ++e) at_exit[e].push_back(step.confidence[e]);
      input = step.token;
    }
  }
  return at_exit;
}

// A mix: each exit's threshold at quantile q of its confidences, so some tokens leave at each.
DecoderCase decoder_mix(const std::string& name, std::vector<std::vector<double>> at_exit, double q) {
  DecoderCase s{name, {}};
  for (std::vector<double>& conf : at_exit) {
    std::sort(conf.begin(), conf.end());
    const size_t i = std::min(conf.size() - 2, static_cast<size_t>(q * static_cast<double>(conf.size())));
    s.thresholds.push_back(static_cast<float>(0.5 * (conf[i] + conf[i + 1])));
  }
  return s;
}

std::vector<DecoderCase> decoder_cases(const DecoderConfig& c, const FlatParameters& params) {
  std::vector<DecoderCase> cases;
  for (int k = 1; k <= c.num_exits(); ++k) cases.push_back(forced_decoder_case(c, k));
  const std::vector<std::vector<double>> at_exit = decoder_confidences(c, params, decoder_prompts(c, 4, 11));
  cases.push_back(decoder_mix("mix:even", at_exit, 0.5));
  cases.push_back(decoder_mix("mix:late", at_exit, 0.8));
  return cases;
}

std::vector<const DecoderStrategyInfo*> decoder_strategies_on(Device device) {
  std::vector<const DecoderStrategyInfo*> found;
  for (const DecoderStrategyInfo& info : StrategyRegistry::instance().of<DecoderStrategyInfo>())
    if (info.device == device) found.push_back(&info);
  return found;
}

// Runs `info` on `batch` rows for a whole sequence, the reference stepping beside it with the same
// inputs (the reference's own tokens: teacher forcing), and compares every step. A divergence is
// a failure unless the reference's own numbers put it within a tie margin, in which case the
// reference takes the strategy's exit from there on.
DecoderSeen check_decoder(const DecoderStrategyInfo& info, const DecoderConfig& c, const FlatParameters& params,
                          int64_t batch, const DecoderCase& scenario) {
  SCOPED_TRACE(info.key() + " " + scenario.name + " batch " + std::to_string(batch));
  DecoderSeen seen;
  // Every strategy runs one row (a missing package is a failure here, not a skip); past that, what
  // it declares it cannot run is not run.
  if (const Unsupported why = info.supports(c, info.device, batch)) {
    if (batch == 1) ADD_FAILURE() << "does not run at batch 1: " << *why;
    seen.ran = false;
    return seen;
  }
  const DecoderModel model{c, params};
  std::unique_ptr<DecoderStrategy> strategy = info.make();
  strategy->prepare(model, batch);
  const at::Tensor prompts = decoder_prompts(c, batch, 11);
  const at::Device device = torch_device(info.device);
  std::vector<ReferenceDecoder> refs;
  std::vector<int64_t> inputs;
  for (int64_t r = 0; r < batch; ++r) {
    refs.emplace_back(c, params, prompt_row(prompts, r));
    inputs.push_back(prompt_row(prompts, r).back());
  }
  // Twice: start() must empty whatever the previous sequence left.
  for (int sequence = 0; sequence < 2; ++sequence) {
    strategy->start(prompts.to(device));
    if (sequence == 1) {
      refs.clear();
      inputs.clear();
      for (int64_t r = 0; r < batch; ++r) {
        refs.emplace_back(c, params, prompt_row(prompts, r));
        inputs.push_back(prompt_row(prompts, r).back());
      }
    }
    // The next step's input: the reference's tokens; where they are the strategy's own, its own
    // output tensor, as the runner feeds it (a graph strategy then reads it in place, no copy).
    at::Tensor own;
    for (int t = 0; t < c.generate; ++t) {
      const at::Tensor input = own.defined() ? own : at::tensor(inputs, at::kLong).to(device);
      const DecoderStrategy::Observed observed = strategy->observed_step(input, scenario.thresholds);
      const TokenOutput& out = *observed.output;
      const at::Tensor exit_ids = out.exit_id.to(at::kCPU), tokens = out.token.to(at::kCPU);
      const at::Tensor logits = out.logits.to(at::kCPU).contiguous();
      const TokenCounters& counters = observed.counters;
      double heads = 0;
      int deepest = 0;
      for (int64_t r = 0; r < batch; ++r) {
        const int exit = exit_ids[r].item<int>();
        deepest = std::max(deepest, exit);
        const int64_t token = tokens[r].item<int64_t>();
        DecoderReferenceStep ref = refs[r].step(inputs[r], scenario.thresholds);
        if (exit != ref.exit) {
          const int at = std::min(exit, ref.exit);
          const bool tie = at < c.final_exit() && at <= static_cast<int>(ref.confidence.size()) &&
                           std::abs(ref.confidence[at - 1] - scenario.thresholds[at - 1]) < kDecoderTieMargin;
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
          const double got = logits.data_ptr<float>()[r * c.vocab + v];
          EXPECT_NEAR(got, ref.logits[v], kDecoderLogitTolerance * scale)
              << "step " << t << " row " << r << " logit " << v;
          if (std::abs(got - ref.logits[v]) > kDecoderLogitTolerance * scale) return seen;
        }
        if (token != ref.token)
          EXPECT_GE(ref.logits[token], ref.logits[ref.token] - kDecoderTieMargin * scale)
              << "step " << t << " row " << r << ": token " << token << ", the reference's " << ref.token;
        inputs[r] = ref.token;
      }
      own = tokens.equal(at::tensor(inputs, at::kLong)) ? out.token : at::Tensor();
      // Every row gets every layer's keys and values, in full or propagated; a row that leaves at
      // exit e evaluated heads 1..e.
      EXPECT_EQ(counters.layers_run + counters.layers_propagated, static_cast<double>(batch) * c.layers);
      if (info.computes_every_row) {
        EXPECT_EQ(counters.layers_run, static_cast<double>(batch) * c.layers);
        EXPECT_EQ(counters.heads_run, static_cast<double>(batch) * c.num_exits());
      } else if (info.skips_when_all_left) {  // the batch runs as deep as its deepest row, no deeper
        EXPECT_EQ(counters.layers_run, static_cast<double>(batch) * c.exit_layer(deepest)) << "step " << t;
        EXPECT_EQ(counters.heads_run, static_cast<double>(batch) * deepest) << "step " << t;
      } else {
        EXPECT_EQ(counters.heads_run, heads);
      }
      EXPECT_GT(counters.flops_executed, 0.0);
      EXPECT_GT(counters.bytes_read, 0.0);
      if (info.host_decides) EXPECT_GE(counters.host_syncs, 1.0);
      // The native engine's step calls no ATen operator; the others' launches are theirs.
      if (info.engine == Engine::native)
        EXPECT_EQ(counters.launches, 0.0);
      else
        EXPECT_GE(counters.launches, 1.0);
    }
  }
  return seen;
}

}  // namespace condbench::testing
