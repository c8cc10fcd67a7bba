// condbench-infer --model=decoder (docs/design.md §8): every selected decoder strategy generates
// from the same prompts with the same thresholds, each from its own tokens, and the tokens, exit
// ids and every step's logits are printed as JSON with whether they agree.
#include "infer_decoder.h"

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "condbench/decoder/strategy.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/random.h"
#include "condbench/torch_device.h"
#include "condbench/torch_save_files.h"
#include "decoder_sizes.h"
#include "infer_run.h"

namespace condbench {
namespace {

struct DecoderOptions {
  DecoderModel model;
  at::Tensor prompt;  // int64 [rows, prompt], CPU
  std::vector<float> thresholds;
  std::vector<Device> devices;
  std::vector<std::string> strategies;
};

// The model's sizes as flags, --vocab=N as in condbench (one value each here), but for what a
// sequence is: --prompt is a file here, whose rows give the prompt's length, and --generate a flag of
// its own below.
bool infer_size(const FamilyAxis& axis) { return !axis.per_sequence; }

}  // namespace

std::vector<std::string> infer::decoder_flags() {
  std::vector<std::string> names = {"--model",       "--weights",  "--seed",       "--decoder", "--prompt",  "--batch",
                                    "--prompt-seed", "--generate", "--thresholds", "--device",  "--strategy"};
  for (const FamilyAxis& axis : decoder_family().axes())
    if (infer_size(axis)) names.push_back(axis.flag());
  return names;
}

namespace {

DecoderOptions parse(int argc, char** argv) {
  const auto flags = cli::take_flags(argc, argv, infer::decoder_flags(), {});
  if (argc > 1)
    infer::refuse_argument(argv[1], infer::inference_flags(), "not a flag of --model=decoder (--help lists its flags)");
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  DecoderOptions options;
  // Sizes the weights cannot say (heads, exit_every), or every size with seeded weights; each by the
  // flag that gave it ("--decoder: vocab", the old spelling, or "--vocab"), for the refusals below.
  DecoderConfig config;
  std::map<std::string, std::string> set;
  for (const std::string& key : apply_decoder_sizes(given("--decoder") ? flags.at("--decoder") : "", config))
    set[key] = "--decoder: " + key;
  for (const FamilyAxis& axis : decoder_family().axes()) {
    if (!infer_size(axis) || !given(axis.flag())) continue;
    if (set.count(axis.key)) fail(axis.flag() + ": --decoder=" + axis.key + " gives it too; drop one");
    config.set(axis.key, static_cast<int>(cli::parse_int(axis.flag(), flags.at(axis.flag()), 1, axis.max)));
    set[axis.key] = axis.flag();
  }
  const auto set_by_decoder = [&](const std::string& key) { return set.count(key) > 0; };
  // Two flags for one size: neither may be dropped in silence.
  if (given("--prompt") && set_by_decoder("prompt"))
    fail("--decoder: prompt: --prompt gives the prompt's tokens per row; drop one");
  if (given("--generate") && set_by_decoder("generate")) fail("--decoder: generate: given by --generate too; drop one");
  if (given("--weights")) {
    if (given("--seed")) fail("--seed: not with --weights (the file gives the weights)");
    for (const FamilyAxis& axis : decoder_family().axes())
      if (axis.from_weights && set_by_decoder(axis.key))
        fail(set.at(axis.key) + ": the weights give it (--weights); drop it");
    DecoderConfig sizes = config;
    sizes.prompt = sizes.generate = 1;  // the run's lengths are checked below, against the flags that give them
    options.model = load_decoder_file(flags.at("--weights"), sizes);
    for (const FamilyAxis& axis : decoder_family().axes())
      if (axis.from_weights) config.set(axis.key, options.model.config.size(axis.key));
  } else {
    DecoderConfig sizes = config;
    sizes.prompt = sizes.generate = 1;
    try {
      sizes.validate();
    } catch (const Error& e) {
      fail(std::string(given("--decoder") ? "--decoder: " : "the decoder: ") + e.what());
    }
  }
  int64_t rows = 4;
  at::Tensor prompt;  // given; else seeded below, once the budget allows
  if (given("--prompt")) {
    if (given("--batch") || given("--prompt-seed")) fail("--prompt: not with --batch or --prompt-seed");
    prompt = load_prompt_file(flags.at("--prompt"), config);
    rows = prompt.size(0);
    config.prompt = static_cast<int>(prompt.size(1));
  } else if (given("--batch")) {
    rows = cli::parse_batch(flags.at("--batch"));
  }
  if (given("--generate"))
    config.generate = static_cast<int>(cli::parse_int("--generate", flags.at("--generate"), 1, 1 << 14));
  if (config.prompt + config.generate - 1 > config.context)
    fail("--generate: " + std::to_string(config.generate) + " tokens after a prompt of " +
         std::to_string(config.prompt) + " go beyond the context of " + std::to_string(config.context));
  config.validate();
  // Before the weights are seeded, the prompts made, or any strategy's cache: a flag of a few
  // characters (--batch=65536) or a small file cannot ask for more than the budget.
  MemoryNeed need = config.memory_need(rows);
  need.add_all(decoder_output_terms(), config.memory_sizes(rows));
  need.require((given("--prompt") ? "--prompt of " : "--batch of ") + std::to_string(rows) + " rows, the decoder " +
               config.describe());
  if (!given("--weights"))
    options.model = {config, seeded_decoder_parameters(config, cli::parse_seed(flags, "--seed", 1))};
  options.prompt = prompt.defined()
                       ? prompt
                       : at::tensor(seeded_prompts(config, rows, cli::parse_seed(flags, "--prompt-seed", 0)), at::kLong)
                             .reshape({rows, config.prompt});
  options.model.config = config;
  options.thresholds = cli::parse_thresholds(flags, config.num_exits() - 1);
  options.devices = given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (given("--strategy")) options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
  return options;
}

// One strategy's whole generation, on the CPU: tokens and exit ids [rows, generate], logits
// [rows, generate, vocab].
infer::Answer generate(DecoderStrategy& strategy, const DecoderOptions& options) {
  const DecoderConfig& c = options.model.config;
  const at::Device device = torch_device(strategy.device());
  const at::Tensor prompt = options.prompt.to(device);
  strategy.start(prompt);
  at::Tensor input = prompt.select(1, c.prompt - 1).contiguous();
  std::vector<at::Tensor> tokens, exit_ids, logits;
  for (int t = 0; t < c.generate; ++t) {
    const TokenOutput& out = strategy.step(input, options.thresholds);
    strategy.finish();
    tokens.push_back(out.token.to(at::kCPU, at::kLong).clone());
    exit_ids.push_back(out.exit_id.to(at::kCPU, at::kInt).clone());
    logits.push_back(out.logits.to(at::kCPU, at::kFloat).clone());
    input = out.token.clone();
  }
  return {at::stack(exit_ids, 1), at::stack(logits, 1), at::stack(tokens, 1)};
}

}  // namespace

bool wants_decoder(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string name;
    if (arg.rfind("--model=", 0) == 0)
      name = arg.substr(std::string("--model=").size());
    else if (arg == "--model" && i + 1 < argc)
      name = argv[i + 1];
    else
      continue;
    try {
      return family(name).unit() == TimedUnit::token;
    } catch (const Error&) {  // no such family: the model's flags say so
      return false;
    }
  }
  return false;
}

int run_decoder(int argc, char** argv) {
  const DecoderOptions options = parse(argc, argv);
  const DecoderConfig& c = options.model.config;
  const int64_t rows = options.prompt.size(0);
  const auto unsupported = [&](const StrategyEntry& entry) {
    return dynamic_cast<const DecoderStrategyInfo&>(entry).supports(c, entry.device, rows);
  };
  const auto answer = [&](const StrategyEntry& entry,
                          const std::function<void(const std::string&)>& disagree) -> std::optional<infer::Answer> {
    std::unique_ptr<DecoderStrategy> strategy = dynamic_cast<const DecoderStrategyInfo&>(entry).make();
    try {
      strategy->prepare(options.model, rows);
    } catch (const NotRunnable&) {
      throw;
    } catch (const Error& e) {  // an aoti package that computes another model: said, and no agreement
      disagree(e.what());
      return std::nullopt;
    }
    return generate(*strategy, options);
  };
  return infer::run_strategies({.entries = infer::entries_of<DecoderStrategyInfo>(),
                                .model = "model=" + decoder_family().name() + " " + c.describe(),
                                .rows = rows,
                                .thresholds = options.thresholds,
                                .devices = options.devices,
                                .strategies = options.strategies,
                                .noun = "decoder strategy",
                                .overflow = "the weights",
                                .unsupported = unsupported,
                                .answer = answer});
}

}  // namespace condbench
