// condbench-infer: a user's check that the strategies are right for their own model (docs/design.md §5).
// Runs every selected strategy on the same weights, inputs and thresholds and prints each one's
// exit ids and logits as JSON, with whether they all agree; those that cannot run the model at
// this batch (cond at more than one row, an aoti strategy whose package is not compiled) are
// listed under "skipped" with the reason. Exit code 0: all agree; 1: they do not; 2: bad input.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/model_file.h"
#include "condbench/torch_device.h"
#include "condbench/torch_save_files.h"
#include "condbench/workload.h"
#include "infer_run.h"
#include "infer_token.h"
#include "model_file_compile.h"

namespace condbench {
namespace {

struct Options {
  ModelSource source;
  at::Tensor input;  // [rows, row_shape...], CPU, the model's input dtype
  std::vector<float> thresholds;
  std::vector<Device> devices;
  std::vector<std::string> strategies;
  std::string model_file_used;  // which compiled folder and how old (ModelFileFlags::used)
};

void print_usage(std::ostream& out) {
  out << "usage: condbench-infer [--weights=FILE [SIZES]\n"
         "                        | --seed=N [--model=FAMILY] [SIZES] [--num-classes=N] [--blocks=N]\n"
         "                        | --model-file=FILE.py|DIR [--model-weights=FILE] [--compile-timeout=SECONDS]]\n"
         "                       [--input=FILE[,FILE...] | --batch=N --input-seed=N] --thresholds=T1,...,TB\n"
         "                       [--device=cpu|cuda|all] [--strategy=LIST]\n";
  for (const TokenInferMode& mode : token_infer_modes())  // a family timed per token: prompts, not rows
    out << "       condbench-infer --model=" << mode.family->name() << " [--weights=FILE | --seed=N] [--SIZE=N ...]\n"
        << "                       [--prompt=FILE | --batch=N --prompt-seed=N] [--generate=N] --thresholds=T1,...\n"
        << "                       [--device=cpu|cuda|all] [--strategy=LIST]\n";
  out << "  the family (default " << model_families().front()->name()
      << ") and its sizes, --SIZE=N each; with --weights the family comes from the keys and only the\n"
         "  sizes marked * are given (the file cannot say them); those marked < can come from --input's shape:\n";
  const auto sizes = [&out](const std::string& name, const std::vector<FamilyAxis>& axes) {
    out << "    " << name << ":";
    for (const FamilyAxis& axis : axes)
      if (!axis.per_sequence)
        out << " " << axis.flag() << (axis.from_weights ? "" : "*") << (axis.input_dim >= 0 ? "<" : "") << " ("
            << axis.help << ", default " << axis.fallback << ")";
    out << "\n";
  };
  for (const Family* family : families()) sizes(family->name(), family->axes());
  // --thresholds takes one per exit before the final one: the default models' counts, from their families.
  out << "  --thresholds: one per exit before the final one (a family's --blocks; the decoder's exits but one); by\n"
         "  default";
  std::string counts;
  for (const ModelFamily* family : model_families())
    counts += " " + family->name() + " " + std::to_string(family->default_blocks()) + ",";
  for (const TokenInferMode& mode : token_infer_modes())
    counts += " " + mode.family->name() + " " + std::to_string(mode.default_thresholds) + ",";
  counts.pop_back();
  out << counts << "\n";
  out << "  --strategy: names (masked: every device and engine's) or the keys condbench --list prints "
         "(cpu/torch/masked)\n";
  for (const TokenInferMode& mode : token_infer_modes())
    if (!mode.sizes_flag.empty())
      out << "  the " << mode.family->name() << "'s sizes may also be " << mode.sizes_flag
          << "=SIZE=N,..., the old spelling; its prompt's length is\n  --prompt's (a file), or " << mode.sizes_flag
          << "=prompt=N for seeded prompts\n";
  out << "  --model-file: your model (docs/your-model.md): its Python file, compiled by "
         "python/condbench/model_file.py\n"
         "  for the device (cached; --model-weights: a state_dict for it), or the folder such a compile made;\n"
         "  each strategy is first checked against the module's own forward on the folder's reference rows;\n"
         "  --compile-timeout: the compile's limit in seconds (default 1800), its process group ended there\n"
         "  --input: the rows (torch.save); a model file of several inputs takes one file each, in the order\n"
         "  example_input() gives them (ids.pt,mask.pt), or them packed into one row as condbench carries them\n";
}

// The families that have the size `key`, the first one first.
std::vector<std::string> owners_of(const std::string& key) {
  std::vector<std::string> owners;
  for (const ModelFamily* family : model_families())
    if (family->axis(key)) owners.push_back(family->name());
  return owners;
}

// "the transformer's": whose size `key` is.
std::string whose(const std::string& key) {
  std::string text;
  for (const std::string& owner : owners_of(key)) text += (text.empty() ? "the " : " and the ") + owner + "'s";
  return text;
}

// The rows of several --input files, one per tensor the model takes (`shapes`: each one's row), packed
// into the model's one row as condbench carries them: each tensor's values one after another.
at::Tensor packed(const std::vector<at::Tensor>& inputs, const std::vector<std::vector<int64_t>>& shapes) {
  if (inputs.size() != shapes.size())
    fail("--input: " + std::to_string(inputs.size()) + " files for a model of " + std::to_string(shapes.size()) +
         " input" + (shapes.size() == 1 ? "" : "s") + " (one file each, in the order example_input() gives them)");
  std::vector<at::Tensor> rows;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    const std::string which = "--input: file " + std::to_string(i + 1) + " ";
    if (t.dim() != static_cast<int64_t>(shapes[i].size()) + 1 || t.sizes().slice(1) != at::IntArrayRef(shapes[i])) {
      std::string want = "rows";
      for (const int64_t d : shapes[i]) want += ", " + std::to_string(d);
      fail(which + shape_text(t.sizes()) + ": the model's input " + std::to_string(i + 1) + " is [" + want + "]");
    }
    if (t.size(0) != inputs[0].size(0))
      fail(which + "has " + std::to_string(t.size(0)) + " rows, file 1 " + std::to_string(inputs[0].size(0)));
    if (t.scalar_type() != inputs[0].scalar_type())
      fail(which + "is " + std::string(c10::toString(t.scalar_type())) + ", file 1 " +
           std::string(c10::toString(inputs[0].scalar_type())) + ": give every input one dtype");
    rows.push_back(t.reshape({t.size(0), -1}));
  }
  return at::cat(rows, 1);
}

// The memory budget (memory_budget.h) of `rows` rows of the model, and of their logits as this
// tool keeps and prints them (two strategies' at once, then as JSON: a number node and its text),
// before the rows are made.
void require_memory_budget(const ModelConfig& config, int64_t rows, const std::string& who) {
  MemoryNeed need = config.memory_need(rows);
  need.add("the logits kept and printed",
           std::to_string(rows) + " rows x " + std::to_string(config.num_classes) + " num_classes x 12",
           12.0 * static_cast<double>(rows) * config.num_classes);
  need.require(who + " of " + config.describe());
}

// Every family's sizes, each flag once.
std::vector<const FamilyAxis*> size_axes() {
  std::vector<const FamilyAxis*> axes;
  std::vector<std::string> seen;
  for (const ModelFamily* family : model_families())
    for (const FamilyAxis& axis : family->axes())
      if (std::find(seen.begin(), seen.end(), axis.flag()) == seen.end()) {
        seen.push_back(axis.flag());
        axes.push_back(&axis);
      }
  return axes;
}

}  // namespace

std::vector<std::string> infer::inference_flags() {
  std::vector<std::string> names = {"--weights",  "--seed",       "--model",         "--num-classes",    "--blocks",
                                    "--input",    "--batch",      "--input-seed",    "--thresholds",     "--device",
                                    "--strategy", "--model-file", "--model-weights", "--compile-timeout"};
  for (const FamilyAxis* axis : size_axes())
    if (std::find(names.begin(), names.end(), axis->flag()) == names.end()) names.push_back(axis->flag());
  return names;
}

namespace {

Options parse_options(int argc, char** argv) {
  const std::vector<const FamilyAxis*> axes = size_axes();
  const auto flags = cli::take_flags(argc, argv, infer::inference_flags(), {});
  if (argc > 1) {
    infer::OtherModes others;  // a flag of a family timed per token is said to be its (two's: the first's)
    for (const TokenInferMode& mode : token_infer_modes())
      others.emplace_back(mode.flags, "the " + mode.family->name() + "'s flag; with --model=" + mode.family->name());
    infer::refuse_argument(argv[1], others);
  }
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  auto int_flag = [&](const std::string& name, int hi) {
    return static_cast<int>(cli::parse_int(name, flags.at(name), 1, hi));
  };
  Options options;
  at::Tensor input;
  std::vector<at::Tensor> inputs;  // --input=A,B,...: one file per tensor the model takes, packed below
  if (given("--input")) {
    if (given("--batch") || given("--input-seed")) fail("--input: not with --batch or --input-seed");
    for (const std::string& file : cli::split_list("--input", flags.at("--input")))
      inputs.push_back(load_tensor_file(file));
    if (inputs.size() == 1) input = inputs.front();
  }
  std::map<std::string, int> sizes;  // by axis key, from the flags
  std::map<std::string, std::string> flag_of;
  for (const FamilyAxis* axis : axes) {
    flag_of[axis->key] = axis->flag();
    if (given(axis->flag())) sizes[axis->key] = int_flag(axis->flag(), axis->max);
  }
  if (given("--model-file")) {
    for (const char* f : {"--weights", "--seed", "--model", "--num-classes", "--blocks"})
      if (given(f)) fail(std::string(f) + ": not with --model-file (the model file gives the model)");
    if (!sizes.empty())
      fail(flag_of.at(sizes.begin()->first) + ": not with --model-file (the model file gives the model)");
  }
  const std::vector<Device> devices =
      given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (const std::optional<ModelFileFlags> read = read_model_file_flags(flags, devices, kModelFileMaxRowValues)) {
    options.source.config = read->config;
    options.model_file_used = read->used;
  } else if (given("--weights")) {
    for (const char* f : {"--seed", "--model", "--num-classes", "--blocks"})
      if (given(f)) fail(std::string(f) + ": not with --weights (the file gives the model)");
    for (const FamilyAxis* axis : axes)
      if (given(axis->flag()) && axis->from_weights)
        fail(axis->flag() + ": not with --weights (the file gives the model)");
    options.source.weights_path = flags.at("--weights");
    options.source.given = sizes;
  } else {
    ModelConfig& config = options.source.config;
    try {
      config = model_config(given("--model") ? flags.at("--model") : "mlp");
    } catch (const Error& e) {
      fail(std::string("--model: ") + e.what());
    }
    options.source.seed = cli::parse_seed(flags, "--seed", options.source.seed);
    for (const auto& [key, value] : sizes)
      if (!config.has(key)) fail(flag_of.at(key) + ": " + whose(key) + "; add --model=" + owners_of(key)[0]);
    for (const FamilyAxis& axis : config.family->axes())
      if (sizes.count(axis.key))
        config.set(axis.key, sizes.at(axis.key));
      else if (!axis.scales_with.empty())
        config.set(axis.key, axis.scale * config.size(axis.scales_with));
    if (given("--num-classes")) config.num_classes = int_flag("--num-classes", 1 << 16);
    if (given("--blocks")) config.blocks = int_flag("--blocks", 256);
    config.validate();
  }
  ModelConfig config = shared_model(options.source)->config();
  for (const auto& [key, value] : sizes)
    if (!config.has(key))
      fail(flag_of.at(key) + ": " + whose(key) + "; this model is of the " + config.family->name() + " family");
  if (inputs.size() > 1) input = packed(inputs, config.family->input_shapes(config));
  // A size an input row's shape holds (a transformer's tokens per row) is the input's.
  const std::vector<int64_t> row = config.row_shape();
  if (input.defined() &&
      (input.dim() == static_cast<int64_t>(row.size()) || input.dim() == static_cast<int64_t>(row.size()) + 1)) {
    for (const FamilyAxis& axis : config.family->axes()) {
      if (axis.input_dim < 0) continue;
      const int held = static_cast<int>(input.size(input.dim() - static_cast<int64_t>(row.size()) + axis.input_dim));
      if (held == config.size(axis.key)) continue;
      if (sizes.count(axis.key))
        fail(axis.flag() + "=" + std::to_string(config.size(axis.key)) + ": the input holds " + std::to_string(held) +
             " " + axis.help + "; drop " + axis.flag());
      if (options.source.weights_path.empty())
        options.source.config.set(axis.key, held);
      else
        options.source.given[axis.key] = held;
      config = shared_model(options.source)->config();
    }
  }

  if (input.defined()) {
    const std::vector<int64_t> row = config.row_shape();
    if (input.dim() == static_cast<int64_t>(row.size())) input = input.unsqueeze(0);  // one row
    // Token ids are integers (any integer dtype, read as int64); every other model's input is floats.
    const bool ids = input_dtype(config) == at::kLong;
    const bool kind =
        ids ? at::isIntegralType(input.scalar_type(), /*includeBool=*/false) : at::isFloatingType(input.scalar_type());
    if (!kind || input.dim() != static_cast<int64_t>(row.size()) + 1 ||
        input.sizes().slice(1) != at::IntArrayRef(row)) {
      std::string want = "rows";
      for (const int64_t d : row) want += ", " + std::to_string(d);
      fail(std::string("--input: expected ") +
           (ids ? "an integer tensor of token ids [" : "a floating-point tensor [") + want + "], got " +
           std::string(c10::toString(input.scalar_type())) + " " + shape_text(input.sizes()));
    }
    if (input.size(0) < 1) fail("--input: the tensor has no rows");
    require_memory_budget(config, input.size(0), "--input " + shape_text(input.sizes()));
    if (!ids && !input.isfinite().all().item<bool>()) fail("--input: the tensor holds NaN or infinite values");
    options.input = input.to(at::kCPU, input_dtype(config)).contiguous();
    config.family->check_input_values(options.input, "--input");
  } else {
    const int64_t rows = given("--batch") ? cli::parse_batch(flags.at("--batch")) : 8;
    require_memory_budget(config, rows, "--batch " + std::to_string(rows));
    options.input = input_rows(config, rows, cli::parse_seed(flags, "--input-seed", kPoolSeed));
  }
  options.thresholds = cli::parse_thresholds(flags, config.blocks);

  options.devices = devices;
  if (given("--strategy")) options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
  return options;
}

int run(int argc, char** argv) {
  if (const TokenInferMode* mode = token_infer_mode(argc, argv)) return mode->run(argc, argv);
  const Options options = parse_options(argc, argv);
  const EarlyExitModel model = shared_model(options.source);
  const int64_t rows = options.input.size(0);
  bool scores_checked = false;
  const auto unsupported = [&](const StrategyEntry& entry) {
    return dynamic_cast<const StrategyInfo&>(entry).unsupported(model->config(), rows);
  };
  const auto answer = [&](const StrategyEntry& entry, const std::function<void(const std::string&)>& disagree) {
    if (!scores_checked) {
      // The exit rule's score on these rows, as condbench checks it on its pool: a model file's
      // confidence() outside (0, 1] would send rows out at threshold 1 ("no row leaves here").
      // Once a strategy can run them (a folder compiled for another device runs nothing here).
      // (Non-finite scores are weights or rows that overflow float32: said with the strategy.)
      exit_scores_in_range(model, options.input, "the rows given (--input or --batch)", /*pass_non_finite=*/true);
      scores_checked = true;
    }
    std::unique_ptr<Strategy> strategy = dynamic_cast<const StrategyInfo&>(entry).make();
    strategy->prepare(model, rows);
    try {
      model->config().family->check_before_use(*strategy, options.thresholds, rows);
    } catch (const Error& e) {
      disagree(e.what());
    }
    // The input lives until finish(): on CUDA the strategy's stream may still be reading it.
    const at::Tensor input = options.input.to(torch_device(entry.device));
    const ExitOutput result = strategy->run(input, options.thresholds);
    strategy->finish();
    return std::optional<infer::Answer>(
        {result.exit_id.to(at::kCPU, at::kInt).contiguous(), result.logits.to(at::kCPU, at::kFloat).contiguous(), {}});
  };
  const int code = infer::run_strategies({.entries = infer::entries_of<StrategyInfo>(),
                                          .model = model->config().describe_named(),
                                          .rows = rows,
                                          .thresholds = options.thresholds,
                                          .devices = options.devices,
                                          .strategies = options.strategies,
                                          .noun = "strategy",
                                          .overflow = "the weights or the input",
                                          .unsupported = unsupported,
                                          .answer = answer});
  // which folder answered, once it did (a refusal stays one line)
  if (!options.model_file_used.empty()) std::cerr << "condbench-infer: " << options.model_file_used << "\n";
  return code;
}

}  // namespace
}  // namespace condbench

int main(int argc, char** argv) {
  if (condbench::cli::asks_for_help(argc, argv)) {
    condbench::print_usage(std::cout);
    return 0;
  }
  try {
    return condbench::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "condbench-infer: " << condbench::one_line(e) << "\n";
    return condbench::exit_code_for(e);
  } catch (...) {
    std::cerr << "condbench-infer: internal error: an unknown exception\n";
    return 1;
  }
}
