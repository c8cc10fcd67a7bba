#pragma once
// condbench-infer's mode for a family timed per token (docs/design.md §8; the decoder's is
// --model=decoder): every selected strategy of the family generates from the same prompts with the
// same thresholds, each from its own tokens, and the tokens, exit ids and every step's logits are
// printed as JSON with whether they agree. Written once for any such family's Model; what a family
// gives is its TokenInferWork, one line of infer_token.cpp.
#include <ATen/ATen.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/memory_budget.h"
#include "condbench/token_strategy.h"
#include "condbench/torch_device.h"
#include "infer_run.h"

namespace condbench {

// A family timed per token whose config condbench-infer can make from flags: a TokenModel whose
// config is made empty (every size its default), set and read by an axis's key, and whose
// prompt's and generation's lengths are set from --prompt's file and --generate (axes marked
// per_sequence: no flags of their own here); its Model is {config, params}.
template <typename M>
concept TokenInferModel = TokenModel<M> && std::default_initializable<typename M::Config> &&
    requires(M model, typename M::Config c, const FlatParameters& params) {
  {c.set(std::string_view{}, 1)};
  { std::as_const(c).size(std::string_view{}) } -> std::convertible_to<int>;
  c.prompt = 1;
  c.generate = 1;
  model = M{c, params};
};

// What condbench-infer needs of a family timed per token beside its Model (token_strategy.h).
template <TokenInferModel Model>
struct TokenInferWork {
  using Config = typename Model::Config;
  // A state_dict file's model, by the family's contract; the sizes the file cannot say from `sizes`.
  Model (*load)(const std::string& path, const Config& sizes);
  // Token ids int64 [rows, prompt] from a torch.save file, checked against `config`.
  at::Tensor (*load_prompts)(const std::string& path, const Config& config);
  FlatParameters (*seeded)(const Config& config, uint64_t seed);
  std::vector<int64_t> (*seeded_prompts)(const Config& config, int64_t rows, uint64_t seed);
  // What `rows` sequences hold beside the weights, with the answers condbench-infer keeps.
  MemoryNeed (*need)(const Config& config, int64_t rows);
  // Its sizes as one flag, an old spelling (the decoder's --decoder=SIZE=N,...), or none: sets them
  // in `config` and returns their keys.
  const char* sizes_flag = nullptr;
  std::vector<std::string> (*apply_sizes)(const std::string& sizes, Config& config) = nullptr;
};

// A family's mode, as condbench-infer finds it by --model.
struct TokenInferMode {
  const Family* family;
  std::vector<std::string> flags;                 // what the mode takes, for the other mode's refusals
  std::string sizes_flag;                         // TokenInferWork::sizes_flag, or empty
  int default_thresholds = 0;                     // the default model's exits but the final one
  std::function<int(int argc, char** argv)> run;  // exit code 0 when the strategies agree, 1 when not
};

// Every family timed per token's mode, one line each (infer_token.cpp).
const std::vector<TokenInferMode>& token_infer_modes();
// The mode of the family --model names, or nullptr (a family timed per inference, one timed per
// token with no mode, or none).
const TokenInferMode* token_infer_mode(int argc, char** argv);

namespace token_infer_detail {

// The model's sizes as flags, --vocab=N as in condbench (one value each here), but for what a
// sequence is: --prompt is a file here, whose rows give the prompt's length, and --generate a flag of
// its own.
inline bool infer_size(const FamilyAxis& axis) { return !axis.per_sequence; }

template <TokenInferModel Model>
std::vector<std::string> flags(const Family& family, const TokenInferWork<Model>& work) {
  std::vector<std::string> names = {"--model",       "--weights",  "--seed",       "--prompt", "--batch",
                                    "--prompt-seed", "--generate", "--thresholds", "--device", "--strategy"};
  if (work.sizes_flag) names.emplace_back(work.sizes_flag);
  for (const FamilyAxis& axis : family.axes())
    if (infer_size(axis)) names.push_back(axis.flag());
  return names;
}

template <TokenInferModel Model>
struct Options {
  Model model;
  at::Tensor prompt;  // int64 [rows, prompt], CPU
  std::vector<float> thresholds;
  std::vector<Device> devices;
  std::vector<std::string> strategies;
};

template <TokenInferModel Model>
Options<Model> parse(const Family& family, const TokenInferWork<Model>& work, int argc, char** argv) {
  using Config = typename Model::Config;
  const auto flags = cli::take_flags(argc, argv, token_infer_detail::flags(family, work), {});
  const std::string who = "--model=" + family.name();
  if (argc > 1)
    infer::refuse_argument(argv[1], {{infer::inference_flags(), "not a flag of " + who + " (--help lists its flags)"}});
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  const std::string sizes_flag = work.sizes_flag ? work.sizes_flag : "";
  Options<Model> options;
  // Sizes the weights cannot say, or every size with seeded weights; each by the flag that gave it
  // ("--decoder: vocab", the old spelling, or "--vocab"), for the refusals below.
  Config config{};
  std::map<std::string, std::string> set;
  if (work.apply_sizes && given(sizes_flag))
    for (const std::string& key : work.apply_sizes(flags.at(sizes_flag), config)) set[key] = sizes_flag + ": " + key;
  for (const FamilyAxis& axis : family.axes()) {
    if (!infer_size(axis) || !given(axis.flag())) continue;
    if (set.count(axis.key)) fail(axis.flag() + ": " + sizes_flag + "=" + axis.key + " gives it too; drop one");
    config.set(axis.key, static_cast<int>(cli::parse_int(axis.flag(), flags.at(axis.flag()), 1, axis.max)));
    set[axis.key] = axis.flag();
  }
  // Two flags for one size (a sequence's sizes are no flags of their own here): neither may be
  // dropped in silence.
  if (given("--prompt") && set.count("prompt"))
    fail(sizes_flag + ": prompt: --prompt gives the prompt's tokens per row; drop one");
  if (given("--generate") && set.count("generate")) fail(sizes_flag + ": generate: given by --generate too; drop one");
  const std::string sizes_said = given(sizes_flag) ? sizes_flag + ": " : "the " + family.name() + ": ";
  if (given("--weights")) {
    if (given("--seed")) fail("--seed: not with --weights (the file gives the weights)");
    for (const FamilyAxis& axis : family.axes())
      if (axis.from_weights && set.count(axis.key))
        fail(set.at(axis.key) + ": the weights give it (--weights); drop it");
    Config sizes = config;
    sizes.prompt = sizes.generate = 1;  // the run's lengths are checked below, against the flags that give them
    options.model = work.load(flags.at("--weights"), sizes);
    for (const FamilyAxis& axis : family.axes())
      if (axis.from_weights) config.set(axis.key, options.model.config.size(axis.key));
  } else {
    Config sizes = config;
    sizes.prompt = sizes.generate = 1;
    try {
      sizes.validate();
    } catch (const Error& e) {
      fail(sizes_said + e.what());
    }
  }
  int64_t rows = 4;
  at::Tensor prompt;  // given; else seeded below, once the budget allows
  if (given("--prompt")) {
    if (given("--batch") || given("--prompt-seed")) fail("--prompt: not with --batch or --prompt-seed");
    prompt = work.load_prompts(flags.at("--prompt"), config);
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
  // Before the weights are seeded, the prompts made, or any strategy's state: a flag of a few
  // characters (--batch=65536) or a small file cannot ask for more than the budget.
  work.need(config, rows)
      .require((given("--prompt") ? "--prompt of " : "--batch of ") + std::to_string(rows) + " rows, the " +
               family.name() + " " + config.describe());
  if (!given("--weights")) options.model = {config, work.seeded(config, cli::parse_seed(flags, "--seed", 1))};
  options.prompt =
      prompt.defined()
          ? prompt
          : at::tensor(work.seeded_prompts(config, rows, cli::parse_seed(flags, "--prompt-seed", 0)), at::kLong)
                .reshape({rows, config.prompt});
  options.model.config = config;
  options.thresholds = cli::parse_thresholds(flags, config.num_exits() - 1);
  options.devices = given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (given("--strategy")) options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
  return options;
}

// One strategy's whole generation, on the CPU: tokens and exit ids [rows, generate], logits
// [rows, generate, vocab].
template <TokenInferModel Model>
infer::Answer generate(TokenStrategy<Model>& strategy, const Options<Model>& options) {
  const auto& c = options.model.config;
  const at::Tensor prompt = options.prompt.to(torch_device(strategy.device()));
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

template <TokenInferModel Model>
int run(const Family& family, const TokenInferWork<Model>& work, int argc, char** argv) {
  using Info = TokenStrategyInfo<Model>;
  const Options<Model> options = parse(family, work, argc, argv);
  const int64_t rows = options.prompt.size(0);
  const auto unsupported = [&](const StrategyEntry& entry) {
    return dynamic_cast<const Info&>(entry).supports(options.model.config, entry.device, rows);
  };
  const auto answer = [&](const StrategyEntry& entry,
                          const std::function<void(const std::string&)>& disagree) -> std::optional<infer::Answer> {
    std::unique_ptr<TokenStrategy<Model>> strategy = dynamic_cast<const Info&>(entry).make();
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
  return infer::run_strategies({.entries = infer::entries_of<Info>(),
                                .model = "model=" + family.name() + " " + options.model.config.describe(),
                                .rows = rows,
                                .thresholds = options.thresholds,
                                .devices = options.devices,
                                .strategies = options.strategies,
                                .noun = family.name() + " strategy",
                                .overflow = "the weights",
                                .unsupported = unsupported,
                                .answer = answer});
}

}  // namespace token_infer_detail

// `family`'s entry in token_infer_modes().
template <TokenInferModel Model>
TokenInferMode make_token_infer_mode(const Family& family, const TokenInferWork<Model>& work) {
  if (!work.load || !work.load_prompts || !work.seeded || !work.seeded_prompts || !work.need ||
      (work.sizes_flag == nullptr) != (work.apply_sizes == nullptr))
    fail("the " + family.name() + " family's TokenInferWork is not whole");
  return {&family, token_infer_detail::flags(family, work), work.sizes_flag ? work.sizes_flag : "",
          typename Model::Config{}.num_exits() - 1,
          [&family, work](int argc, char** argv) { return token_infer_detail::run(family, work, argc, argv); }};
}

}  // namespace condbench
