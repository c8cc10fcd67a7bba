// condbench-infer --model=decoder (docs/design.md §8): every selected decoder strategy generates
// from the same prompts with the same thresholds, each from its own tokens, and the tokens, exit
// ids and every step's logits are printed as JSON with whether they agree.
#include "infer_decoder.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "condbench/agreement.h"
#include "condbench/error.h"
#include "condbench/random.h"
#include "condbench/torch_device.h"
#include "condbench/torch_save_files.h"
#include "decoder_sizes.h"

namespace condbench {
namespace {

using Json = nlohmann::ordered_json;

struct DecoderOptions {
  DecoderModel model;
  at::Tensor prompt;  // int64 [rows, prompt], CPU
  std::vector<float> thresholds;
  std::vector<Device> devices;
  std::vector<std::string> strategies;
};

DecoderOptions parse(int argc, char** argv) {
  const auto flags = cli::take_flags(argc, argv,
                                     {"--model", "--weights", "--seed", "--decoder", "--prompt", "--batch",
                                      "--prompt-seed", "--generate", "--thresholds", "--device", "--strategy"},
                                     {});
  if (argc > 1) fail(std::string("unknown argument '") + printable(argv[1]) + "' (--help lists the flags)");
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  DecoderOptions options;
  // Sizes the weights cannot say (heads, exit_every), or every size with seeded weights.
  DecoderConfig config;
  apply_decoder_sizes(given("--decoder") ? flags.at("--decoder") : "", config);
  if (given("--weights")) {
    if (given("--seed")) fail("--seed: not with --weights (the file gives the weights)");
    DecoderConfig sizes = config;
    sizes.prompt = sizes.generate = 1;  // the run's lengths are checked below, against the flags that give them
    options.model = load_decoder_file(flags.at("--weights"), sizes);
    config.vocab = options.model.config.vocab;
    config.d_model = options.model.config.d_model;
    config.ffn = options.model.config.ffn;
    config.layers = options.model.config.layers;
    config.context = options.model.config.context;
  } else {
    DecoderConfig sizes = config;
    sizes.prompt = sizes.generate = 1;
    try {
      sizes.validate();
    } catch (const Error& e) {
      fail(std::string("--decoder: ") + e.what());
    }
    const uint64_t seed =
        given("--seed") ? static_cast<uint64_t>(cli::parse_int("--seed", flags.at("--seed"), 0, INT64_MAX)) : 1;
    options.model = {config, seeded_decoder_parameters(config, seed)};
  }
  if (given("--prompt")) {
    if (given("--batch") || given("--prompt-seed")) fail("--prompt: not with --batch or --prompt-seed");
    const at::Tensor prompt = load_tensor_file(flags.at("--prompt"));
    if (prompt.dim() != 2 || prompt.size(0) < 1 || prompt.size(1) < 1 ||
        !(prompt.scalar_type() == at::kLong || prompt.scalar_type() == at::kInt))
      fail("--prompt: expected token ids, an int64 tensor [rows, tokens]");
    if (prompt.size(0) > 1 << 16) fail("--prompt: at most 65536 rows");
    if (prompt.size(1) > config.context)
      fail("--prompt: " + std::to_string(prompt.size(1)) + " tokens, longer than the context of " +
           std::to_string(config.context));
    options.prompt = prompt.to(at::kLong).contiguous();
    const int64_t low = options.prompt.min().item<int64_t>(), high = options.prompt.max().item<int64_t>();
    if (low < 0 || high >= config.vocab)
      fail("--prompt: token id " + std::to_string(low < 0 ? low : high) + " is outside the vocabulary 0.." +
           std::to_string(config.vocab - 1));
    config.prompt = static_cast<int>(options.prompt.size(1));
  } else {
    const int64_t rows = given("--batch") ? cli::parse_batch(flags.at("--batch")) : 4;
    const uint64_t seed =
        given("--prompt-seed")
            ? static_cast<uint64_t>(cli::parse_int("--prompt-seed", flags.at("--prompt-seed"), 0, INT64_MAX))
            : 0;
    options.prompt = at::tensor(seeded_prompts(config, rows, seed), at::kLong).reshape({rows, config.prompt});
  }
  if (given("--generate"))
    config.generate = static_cast<int>(cli::parse_int("--generate", flags.at("--generate"), 1, 1 << 14));
  if (config.prompt + config.generate - 1 > config.context)
    fail("--generate: " + std::to_string(config.generate) + " tokens after a prompt of " +
         std::to_string(config.prompt) + " go beyond the context of " + std::to_string(config.context));
  config.validate();
  options.model.config = config;

  const int exits = config.num_exits() - 1;
  if (!given("--thresholds"))
    fail("--thresholds: required, one per exit before the final one (" + std::to_string(exits) + " values in [0, 1])");
  for (const std::string& item : cli::split_list("--thresholds", flags.at("--thresholds"), /*distinct=*/false))
    options.thresholds.push_back(cli::parse_float("--thresholds", item, 0.0f, 1.0f));
  if (static_cast<int>(options.thresholds.size()) != exits)
    fail("--thresholds: expected " + std::to_string(exits) + " values (one per exit before the final one), got " +
         std::to_string(options.thresholds.size()));
  options.devices = given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (given("--strategy")) options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
  return options;
}

// One strategy's whole generation, on the CPU: tokens and exit ids [rows, generate], logits
// [rows, generate, vocab].
struct Generation {
  at::Tensor tokens, exit_ids, logits;
};

Generation generate(DecoderStrategy& strategy, const DecoderOptions& options) {
  const DecoderConfig& c = options.model.config;
  const at::Device device = torch_device(strategy.device());
  const at::Tensor prompt = options.prompt.to(device);
  strategy.start(prompt);
  at::Tensor input = prompt.select(1, c.prompt - 1).contiguous();
  std::vector<at::Tensor> tokens, exit_ids, logits;
  for (int t = 0; t < c.generate; ++t) {
    const DecodeOutput& out = strategy.step(input, options.thresholds);
    strategy.finish();
    tokens.push_back(out.token.to(at::kCPU).clone());
    exit_ids.push_back(out.exit_id.to(at::kCPU).clone());
    logits.push_back(out.logits.to(at::kCPU).clone());
    input = out.token.clone();
  }
  return {at::stack(tokens, 1), at::stack(exit_ids, 1), at::stack(logits, 1)};
}

template <typename T>
Json rows_of(const at::Tensor& t) {  // [rows, n] -> [[...], ...]
  Json out = Json::array();
  const at::Tensor c = t.contiguous();
  for (int64_t r = 0; r < c.size(0); ++r)
    out.push_back(std::vector<T>(c[r].data_ptr<T>(), c[r].data_ptr<T>() + c.size(1)));
  return out;
}

}  // namespace

bool wants_decoder(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == std::string("--model=") + kDecoderFamily) return true;
    if (arg == "--model" && i + 1 < argc && std::string(argv[i + 1]) == kDecoderFamily) return true;
  }
  return false;
}

int run_decoder(int argc, char** argv) {
  const DecoderOptions options = parse(argc, argv);
  const DecoderConfig& c = options.model.config;
  Json out;
  out["model"] = c.describe();
  out["rows"] = options.prompt.size(0);
  out["thresholds"] = options.thresholds;
  out["strategies"] = Json::array();
  std::optional<Generation> first;
  bool agree = true;
  for (const DecoderStrategyInfo& info : decoder_strategies()) {
    if (std::find(options.devices.begin(), options.devices.end(), info.device) == options.devices.end()) continue;
    if (!options.strategies.empty() &&
        std::find(options.strategies.begin(), options.strategies.end(), info.name) == options.strategies.end())
      continue;
    if (info.device == Device::cuda && !cli::cuda_available()) fail("--device: no CUDA device on this machine");
    if (const Unsupported why = info.supports(c, info.device, options.prompt.size(0))) {
      out["skipped"].push_back({{"strategy", info.key()}, {"reason", *why}});
      continue;
    }
    std::unique_ptr<DecoderStrategy> strategy = info.make();
    strategy->prepare(options.model, options.prompt.size(0));
    const Generation g = generate(*strategy, options);
    if (!g.logits.isfinite().all().item<bool>()) {
      if (!first)
        fail(info.key() + ": the logits are not finite: the weights overflow float32, which the model computes in");
      std::cerr << "condbench-infer: " << info.key() << ": the logits are not finite where the first strategy's are\n";
      agree = false;
    }
    Json entry;
    entry["device"] = to_string(info.device);
    entry["engine"] = to_string(info.engine);
    entry["strategy"] = info.name;
    entry["tokens"] = rows_of<int64_t>(g.tokens);
    entry["exit_ids"] = rows_of<int32_t>(g.exit_ids);
    Json logits = Json::array();
    for (int64_t r = 0; r < g.logits.size(0); ++r) logits.push_back(rows_of<float>(g.logits[r]));
    entry["logits"] = std::move(logits);  // [row][step][vocab]
    out["strategies"].push_back(std::move(entry));
    if (!first) {
      first = g;
    } else if (!at::equal(g.tokens, first->tokens) ||
               !results_agree(g.exit_ids.flatten(), g.logits.flatten(0, 1), first->exit_ids.flatten(),
                              first->logits.flatten(0, 1))) {
      agree = false;
    }
  }
  if (out["strategies"].empty()) fail("no decoder strategy matches --device and --strategy");
  out["agree"] = agree;
  std::cout << out.dump(isatty(STDOUT_FILENO) ? 2 : -1) << "\n";
  return agree ? 0 : 1;
}

}  // namespace condbench
