#include "registration.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "benchmark_flags.h"
#include "cli.h"
#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/model_file.h"
#include "condbench/workload.h"
#include "model_file_compile.h"

namespace condbench {

namespace {

// condbench's own flags, each defined once: what parses them and what --help prints.
struct FlagSpec {
  const char* name;
  const char* value;  // the value's form; nullptr for a switch
  const char* help;   // one line, with the default
  // Given, it runs part of the default suite (recorded in the result's context, condbench_selection:
  // scripts/run keeps such a run from replacing a full one as latest). Every size flag selects.
  bool selects = false;
};
constexpr FlagSpec kFlags[] = {
    {"--device", "cpu|cuda|all", "devices to run (default: cpu, and cuda where a GPU is)", true},
    {"--strategy", "NAME[,NAME...]", "names (fused) or --list keys (cpu/native/fused); default: all", true},
    {"--scenario", "S[,S...]", "exit:K or mix:early|uniform|late (default: every one of each depth)", true},
    {"--batch", "N[,N...]", "rows per inference (default: the family's; see its sizes below)", true},
    {"--model", "FAMILY[,...]", "model families, the decoder one of them (default: all; docs/models.md)", true},
    {"--decoder", "SIZE=N[,...]",
     "the decoder's sizes as one flag: the old spelling of its size flags below (until 0.2)", true},
    {"--blocks", "N[,N...]", "the model's depth: blocks, or layers (default: the family's)", true},
    {"--weights", "FILE", "a PyTorch state_dict (torch.save); family and sizes come from it (default: seeded weights)",
     true},
    {"--model-file", "FILE.py|DIR",
     "your model (docs/your-model.md): its Python file, compiled for the run's device by "
     "python/condbench/model_file.py (cached), or the folder such a compile made",
     true},
    {"--model-weights", "FILE", "with --model-file=FILE.py: a state_dict for its module (default: its own weights)",
     true},
    {"--compile-timeout", "SECONDS",
     "with --model-file=FILE.py: the limit on its compile, whole seconds (default 1800); the compile is ended at it",
     true},
    {"--full", nullptr, "the full grid: every family's full sweep of sizes, depths and batches (below)"},
    {"--threads", "N", "LibTorch's intra-op threads (default: LibTorch's choice)"},
    {"--nvtx", "off|run|iter|stage", "NVTX ranges for Nsight Systems (default off)"},
    {"--trace", "FILE", "the NVTX ranges as a Chrome trace for Perfetto, without Nsight (--nvtx=stage unless given)"},
    {"--kernel-trace", "FILE",
     "LibTorch's profiler over the run (every ATen operator and GPU kernel) as a Chrome trace: for kernel tables, "
     "not timings"},
    {"--require-quiet", nullptr,
     "refuse to start on a busy machine, or one whose 1-minute load average is still at half its CPUs (exit 2)"},
    {"--wait-quiet", "SECONDS",
     "before the run, wait up to SECONDS for a quiet machine (the load average below half the CPUs); scripts/run "
     "gives 600 with --require-quiet"},
    {"--progress", nullptr, "progress and the time left on stderr even when it is not a terminal (default: on one)"},
    {"--in-order", nullptr, "repetitions in registration order (default: randomly interleaved)"},
    {"--rounds", nullptr,
     "the repetitions as rounds: every benchmark once a round, in a new random order, the checkpoint after each, so "
     "a run cut short leaves whole rounds"},
    {"--answer-budget", "SECONDS",
     "after the run, interleaved rounds over the answer's undecided comparisons until decided (default 0: none)"},
    {"--checkpoint-out", "FILE", "Google Benchmark JSON of every finished benchmark, as they finish"},
    {"--export-workload", "DIR", "write weights, input pool and thresholds for the Python peer; run nothing"},
    {"--list", nullptr, "the strategies, what they declare, and what they cannot run here; run nothing"},
};

// The flags of every family's sizes (--hidden, --d-model, ..., --vocab), each once, in family order.
std::vector<std::string> size_flags() {
  std::vector<std::string> flags;
  for (const Family* family : families())
    for (const FamilyAxis& axis : family->axes())
      if (std::find(flags.begin(), flags.end(), axis.flag()) == flags.end()) flags.push_back(axis.flag());
  return flags;
}

// The families whose sizes `flag` sets (--d-model: the transformer and the decoder).
std::vector<const Family*> owners(const std::string& flag) {
  std::vector<const Family*> out;
  for (const Family* family : families())
    if (std::any_of(family->axes().begin(), family->axes().end(),
                    [&](const FamilyAxis& axis) { return axis.flag() == flag; }))
      out.push_back(family);
  return out;
}

std::vector<std::string> flag_names(bool switches) {
  std::vector<std::string> names;
  for (const FlagSpec& f : kFlags)
    if ((f.value == nullptr) == switches) names.emplace_back(f.name);
  if (!switches)
    for (const std::string& flag : size_flags()) names.push_back(flag);
  return names;
}

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (const int v : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(v);  // (apart: GCC 12 warns falsely on `"," + std::to_string(v)`)
  }
  return text;
}

std::string joined(const std::vector<int64_t>& values) {
  return joined(std::vector<int>(values.begin(), values.end()));
}

}  // namespace

void print_flags(std::ostream& out) {
  out << "condbench: data-dependent exits of an early-exit model, written each way a PyTorch user can, under\n"
         "Google Benchmark (docs/running.md). Flags take --name=value or --name value.\n\n"
         "condbench's flags:\n";
  const auto line = [&out](const std::string& form, const std::string& help) {
    out << "  " << form << std::string(form.size() < 32 ? 32 - form.size() : 1, ' ') << help << "\n";
  };
  for (const FlagSpec& f : kFlags) line(std::string(f.name) + (f.value ? std::string("=") + f.value : ""), f.help);
  const auto sizes = [&](const std::vector<FamilyAxis>& axes) {
    for (const FamilyAxis& axis : axes) {
      std::string fallback = axis.runs.empty() ? std::to_string(axis.fallback) : joined(axis.runs);
      if (!axis.full_runs.empty()) fallback += "; --full " + joined(axis.full_runs);
      if (!axis.scales_with.empty()) fallback = std::to_string(axis.scale) + " x " + axis.scales_with;
      line(axis.flag() + "=N[,N...]", axis.help + " (default " + fallback + ")");
    }
  };
  out << "\nEach family's sizes are flags, a list a sweep. A size flag selects every family that has it unless\n"
         "--model narrows the choice; a flag two families share (--d-model, --heads, --ffn) sets both.\n";
  for (const Family* family : families()) {
    out << "\nThe " << family->name() << " family (--model=" << family->name() << "): " << family->summary()
        << ".\n  one iteration: " << (family->unit() == TimedUnit::token ? "one generated token" : "one inference")
        << "; ";
    if (const ModelFamily* model = family->per_inference())
      out << "blocks " << joined(model->runs_blocks(false)) << " (--full " << joined(model->runs_blocks(true)) << "), ";
    out << "batch " << joined(family->runs_batches(false)) << " (--full " << joined(family->runs_batches(true))
        << ")\n";
    sizes(family->axes());
  }
  out << "\nGoogle Benchmark's flags:\n";
}

namespace {

std::vector<const Family*> parse_families(const std::string& flag, const std::string& text) {
  std::vector<const Family*> selected;
  for (const std::string& name : cli::split_list(flag, text)) {
    try {
      selected.push_back(&family(name));
    } catch (const Error& e) {
      fail(flag + ": " + e.what());
    }
  }
  return selected;
}

bool contains(const std::vector<const Family*>& families, const Family* family) {
  return std::find(families.begin(), families.end(), family) != families.end();
}

// Whether any of `families` is timed per inference (has blocks, reads --weights).
bool any_per_inference(const std::vector<const Family*>& families) {
  return std::any_of(families.begin(), families.end(), [](const Family* f) { return f->per_inference(); });
}

// Refuses a size flag that sets no family `selected` holds: --model chose others.
void require_selected(const std::map<std::string, std::string>& flags, const std::vector<const Family*>& selected) {
  for (const std::string& flag : size_flags()) {
    if (flags.count(flag) == 0) continue;
    std::string names;  // "the transformer and the decoder"
    bool chosen = false;
    for (const Family* family : owners(flag)) {
      names += (names.empty() ? "the " : " and the ") + family->name();
      chosen |= contains(selected, family);
    }
    if (!chosen)
      fail(flag + ": sets " + names + "; --model does not select " +
           (names.find(" and ") == std::string::npos ? "it" : "them"));
  }
}

// The models the flags select (docs/design.md §4): for each family, every depth at every
// combination of its sizes (cli::size_combinations), then --full's extras; each once.
std::vector<ModelSelection> select_models(const std::map<std::string, std::string>& flags, bool full,
                                          const std::vector<const Family*>& selected) {
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  const std::vector<int64_t> batches =
      given("--batch") ? cli::parse_batches(flags.at("--batch")) : std::vector<int64_t>{};
  std::vector<ModelSelection> models;
  for (const Family* each : selected) {
    const ModelFamily* family = each->per_inference();
    if (family == nullptr) continue;  // a family timed per token: its TokenModels
    std::vector<int> depths = family->runs_blocks(full);
    if (given("--blocks")) {
      depths.clear();
      for (const int64_t v : cli::parse_int_list("--blocks", flags.at("--blocks"), 1, 256))
        depths.push_back(static_cast<int>(v));
    }
    const std::vector<std::vector<int>> sizes = cli::size_combinations(*family, flags, full);
    std::vector<ModelConfig> configs;
    for (const int depth : depths)
      for (const std::vector<int>& each : sizes) {
        ModelConfig& c = configs.emplace_back(family->config());
        c.blocks = depth;
        c.sizes = each;
      }
    if (full)
      for (const ModelConfig& extra : family->full_extras()) configs.push_back(extra);
    for (const ModelConfig& c : configs)
      if (std::none_of(models.begin(), models.end(), [&](const ModelSelection& m) { return m.config == c; }))
        models.push_back({c, !batches.empty() ? batches : family->runs_batches(full)});
  }
  for (const ModelSelection& m : models) m.config.validate();
  return models;
}

// The memory budget (memory_budget.h) of every model at every batch the run selects, before
// anything is made: a case holds its model, its input pool and a batch's working memory.
void require_memory_budget(const RunnerOptions& options) {
  for (const ModelSelection& m : options.models)
    for (const int64_t batch : m.batches) {
      MemoryNeed need = m.config.memory_need(batch);
      Workload::add_pool_need(need, batch, m.config.row_elements(), m.config.family->integer_input());
      need.require("--batch " + std::to_string(batch) + " of " + m.config.describe());
    }
  for (const auto& models : options.token_models) models->require_memory();
}

}  // namespace

std::vector<OutputPath> runner_outputs(const RunnerOptions& options, const std::optional<std::string>& benchmark_out) {
  std::vector<OutputPath> outputs;
  if (benchmark_out) outputs.push_back({"--benchmark_out", *benchmark_out});
  if (!options.checkpoint_out.empty()) outputs.push_back({"--checkpoint-out", options.checkpoint_out});
  if (!options.trace_out.empty()) outputs.push_back({"--trace", options.trace_out});
  if (!options.kernel_trace_out.empty()) outputs.push_back({"--kernel-trace", options.kernel_trace_out});
  if (!options.export_dir.empty()) outputs.push_back({"--export-workload", options.export_dir, true});
  return outputs;
}

std::vector<InputPath> runner_inputs(const RunnerOptions& options) {
  std::vector<InputPath> inputs = {{"--weights", options.weights},
                                   {"--model-file", options.model_file_given},
                                   {"--model-weights", options.model_file_weights},
                                   {"--model-file (its compiled folder)", options.model_file_folder, true}};
  for (const std::string& read : options.model_file_reads)
    inputs.push_back({"--model-file (a file its module reads)", read});
  return inputs;
}

RunnerOptions parse_runner_options(int& argc, char** argv, const std::optional<std::string>& benchmark_out) {
  const auto flags = cli::take_flags(argc, argv, flag_names(false), flag_names(true));
  refuse_unknown_flags(argc, argv);  // before a model file's compile, which takes minutes
  auto given = [&](const std::string& name) { return flags.count(name) > 0; };
  RunnerOptions options;
  options.full = given("--full");
  options.require_quiet = given("--require-quiet");
  if (given("--wait-quiet"))
    options.wait_quiet_s = static_cast<int>(cli::parse_int("--wait-quiet", flags.at("--wait-quiet"), 0, 3600));
  options.in_order = given("--in-order");
  options.rounds = given("--rounds");
  if (options.rounds && options.in_order) fail("--rounds: its rounds are in random order; drop --in-order");
  options.list = given("--list");
  options.progress = given("--progress");
  for (const FlagSpec& f : kFlags)
    if (f.selects && given(f.name)) options.selecting.emplace_back(f.name);
  for (const std::string& flag : size_flags())
    if (given(flag)) options.selecting.push_back(flag);
  options.devices = given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (given("--strategy")) {
    options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
    for (const std::string& name : options.strategies) {
      std::string runs_on;  // the devices `name` is registered on
      bool selected = false;
      for (const auto& entry : StrategyRegistry::instance().all())
        if (entry->answers_to(name) && runs_on.find(to_string(entry->device)) == std::string::npos) {
          runs_on += (runs_on.empty() ? "" : ", ") + std::string(to_string(entry->device));
          selected |= std::find(options.devices.begin(), options.devices.end(), entry->device) != options.devices.end();
        }
      if (!selected) fail("--strategy: " + name + " runs on " + runs_on + " only, which --device does not select");
    }
  }
  if (given("--trace")) {
    options.trace_out = flags.at("--trace");
    options.nvtx = nvtx::Level::stage;
  }
  if (given("--nvtx")) options.nvtx = nvtx::parse_level(flags.at("--nvtx"));
  if (given("--kernel-trace")) options.kernel_trace_out = flags.at("--kernel-trace");
  for (const char* output : {"--trace", "--kernel-trace", "--export-workload", "--checkpoint-out"})
    if (given(output) && flags.at(output).empty()) fail(std::string(output) + ": needs a name");
  if (given("--export-workload")) {
    // An export runs nothing: a result file, a checkpoint or a trace asked beside it would never be written.
    for (const char* output : {"--checkpoint-out", "--trace"})
      if (given(output))
        fail(std::string("--export-workload: runs nothing, so ") + output + " would write nothing; drop one");
    if (benchmark_out) fail("--export-workload: runs nothing, so --benchmark_out would write nothing; drop one");
    options.export_dir = flags.at("--export-workload");
  }
  if (given("--checkpoint-out")) options.checkpoint_out = flags.at("--checkpoint-out");
  if (given("--answer-budget")) {
    options.answer_budget_s = cli::parse_float("--answer-budget", flags.at("--answer-budget"), 0, 86400);
    if (options.in_order && options.answer_budget_s > 0)
      fail("--answer-budget: its rounds are interleaved; drop --in-order");
  }
  if (given("--threads"))
    options.threads = static_cast<int>(cli::parse_int("--threads", flags.at("--threads"), 1, 1024));
  // A model file: its depth and classes are its module's. Alone it runs alone; with --model, a
  // size flag or --weights, beside what they select.
  // Every output checked against the inputs named so far before a model file is compiled: compiling
  // runs the user's code, and takes minutes; the compiled folder is checked again once known (main).
  if (given("--weights")) options.weights = flags.at("--weights");
  if (given("--model-file")) options.model_file_given = flags.at("--model-file");
  if (given("--model-weights")) options.model_file_weights = flags.at("--model-weights");
  check_outputs(runner_outputs(options, benchmark_out), runner_inputs(options));
  std::optional<ModelSelection> model_file;
  bool model_file_alone = false;
  bool others = given("--model") || given("--weights") || given("--decoder");  // models beside a model file
  for (const std::string& flag : size_flags()) others |= given(flag);
  // before its compile: the user's code does not run for a run that cannot start
  if (given("--model-file") && given("--blocks") && !others)
    fail("--blocks: a model file's depth is its module's stages; drop --blocks");
  if (const std::optional<ModelFileFlags> read = read_model_file_flags(
          flags, options.devices, std::min(kModelFileMaxRowValues, kMaxPooledRowValues))) {  // what a run can pool
    options.model_file_given = read->given;
    options.model_file_weights = read->weights;
    options.model_file_folder = read->folder;
    options.model_file_reads = read->reads;
    options.model_file_used = read->used;
    model_file = ModelSelection{read->config, {}};
    model_file->batches = given("--batch") ? cli::parse_batches(flags.at("--batch"))
                                           : model_file->config.family->runs_batches(options.full);
    model_file_alone = !others;
  }
  if (model_file_alone) {
    options.models = {*model_file};
  } else if (given("--weights")) {
    // A file gives its family and every size its shapes hold; a flag may give the others.
    options.weights = flags.at("--weights");
    for (const char* flag : {"--blocks", "--model"})
      if (given(flag)) fail(std::string("--weights: the model's family and sizes come from the file; drop ") + flag);
    for (const std::string& flag : size_flags()) {
      const std::vector<const Family*> by = owners(flag);
      if (given(flag) && !any_per_inference(by))
        fail("--weights: " + flag + " sets the " + by.front()->name() + ", which --weights does not run; drop one");
    }
    if (given("--decoder")) fail("--weights: --decoder sets the decoder, which --weights does not run; drop one");
    for (const ModelFamily* family : model_families())
      for (const FamilyAxis& axis : family->axes()) {
        if (!given(axis.flag())) continue;
        if (axis.from_weights) fail("--weights: the model's family and sizes come from the file; drop " + axis.flag());
        options.weights_given[axis.key] =
            static_cast<int>(cli::parse_int(axis.flag(), flags.at(axis.flag()), 1, axis.max));
      }
    ModelSource source;
    source.weights_path = options.weights;
    source.given = options.weights_given;
    // Read now, so an unreadable or malformed file is a flag error, not a skipped benchmark.
    ModelSelection m;
    try {
      m.config = shared_model(source)->config();
    } catch (const Error& e) {
      if (!model_file) throw;  // beside a model file, the likely mistake is the flag
      fail(one_line(e) + " (--weights gives a built-in family's; a model file's own are --model-weights)");
    }
    for (const auto& [key, value] : source.given)
      if (!m.config.has(key))
        fail("--weights: the file holds a " + m.config.family->name() + " model, which has no " + key + "; drop --" +
             key);
    m.batches = given("--batch") ? cli::parse_batches(flags.at("--batch")) : m.config.family->runs_batches(false);
    options.models = {m};
  } else {
    // Without --model, a size's flag selects the families that have it (--hidden: the mlp alone), so
    // a command line of the mlp runs what it always ran.
    std::vector<const Family*> selected;
    if (given("--model")) {
      selected = parse_families("--model", flags.at("--model"));
    } else {
      // A size's flag selects every family that has it (--d-model: the transformer and the decoder;
      // --vocab: the decoder alone); nothing selects one: the default suite, every family.
      for (const Family* family : families())
        if (std::any_of(family->axes().begin(), family->axes().end(),
                        [&](const FamilyAxis& axis) { return given(axis.flag()); }) ||
            (family == &decoder_family() && given("--decoder")))
          selected.push_back(family);
      if (selected.empty()) selected = families();
    }
    require_selected(flags, selected);
    // --blocks is a family's depth: with none selected (the decoder's is --layers and --exit-every,
    // a model file's its stages) it would be dropped in silence
    if (given("--blocks") && !any_per_inference(selected))
      fail("--blocks: sets a family's depth, and none is selected (the decoder's is --layers and --exit-every)");
    options.models = select_models(flags, options.full, selected);
    for (const Family* family : selected)
      if (family->unit() == TimedUnit::token)
        options.token_models.push_back(token_family(*family).select(flags, options.full));
  }
  if (model_file && !model_file_alone) options.models.push_back(*model_file);
  if (given("--decoder") && std::none_of(options.token_models.begin(), options.token_models.end(),
                                         [](const auto& m) { return &m->family() == &decoder_family(); }))
    fail("--decoder: --model does not select the decoder");
  require_memory_budget(options);
  if (given("--scenario")) {
    int deepest = 0;
    for (const ModelSelection& m : options.models) deepest = std::max(deepest, m.config.blocks);
    for (const auto& models : options.token_models) deepest = std::max(deepest, models->deepest());
    for (const std::string& text : cli::split_list("--scenario", flags.at("--scenario"))) {
      const Scenario scenario = [&] {
        try {
          return Scenario::parse(text);
        } catch (const Error& e) {
          fail("--scenario: " + one_line(e));  // led by the flag, as every flag's error
        }
      }();
      if (!scenario.fits(deepest))
        fail("--scenario: " + text + " needs a model of at least " + std::to_string(scenario.forced_exit()) +
             " exits (the deepest given has " + std::to_string(deepest + 1) + ")");  // exits, the final one too
      options.scenarios.push_back(scenario);
    }
  }
  return options;
}

void require_devices_present(const RunnerOptions& options) {
  for (Device device : options.devices)
    if (const Unsupported why = cli::device_unavailable(device))
      fail(std::string("--device: ") + to_string(device) + " asked for, but " + *why +
           (device == Device::cuda ? " (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides it)" : "") +
           "; --list shows what runs here");
}

std::vector<BenchmarkCase> select_cases(const RunnerOptions& options) {
  std::vector<BenchmarkCase> cases;
  auto wanted = [&](const StrategyInfo& info) { return info.selected(options.devices, options.strategies); };
  for (const ModelSelection& model : options.models) {
    ModelSource source;
    source.config = model.config;
    if (model.config.family->state_dict()) {  // a model file's weights are inside its packages
      source.weights_path = options.weights;
      source.given = options.weights_given;
    }
    const int blocks = model.config.blocks;
    const std::vector<Scenario> scenarios = options.scenarios.empty() ? all_scenarios(blocks) : options.scenarios;
    for (int64_t batch : model.batches)
      for (const Scenario& scenario : scenarios) {
        // exit:K beyond this depth's final exit does not exist here; other depths may have it
        if (!scenario.fits(blocks)) continue;
        for (const StrategyInfo& info : StrategyRegistry::instance().of<StrategyInfo>())
          if (wanted(info)) cases.push_back({&info, source, source.config, batch, scenario});
      }
  }
  if (cases.empty() && std::all_of(options.token_models.begin(), options.token_models.end(),
                                   [&](const auto& m) { return m->case_names(options).empty(); }))
    fail("no benchmark matches the flags given (--device, --strategy, --scenario)");
  return cases;
}

std::vector<UnsupportedCase> unsupported_cases(const RunnerOptions& options) {
  std::vector<UnsupportedCase> out;
  for (const BenchmarkCase& c : select_cases(options))
    if (const Unsupported why = c.strategy->unsupported(c.config, c.batch))
      out.push_back({c.strategy->key(), c.config.describe_named(), c.batch, *why});
  for (const auto& models : options.token_models)
    for (UnsupportedCase& c : models->unsupported(options)) out.push_back(std::move(c));
  return out;
}

void print_strategies(const RunnerOptions& options, std::ostream& out) {
  constexpr size_t kKeyWidth = 30;
  const std::string indent(kKeyWidth, ' ');
  // A strategy's line (key, summary), then what it declares and whether it can run here, indented;
  // those of a family timed per token under their own heading, when the flags select the family.
  const auto print = [&](const StrategyEntry* entry) {
    const std::string key = entry->key();
    out << key << std::string(key.size() < kKeyWidth ? kKeyWidth - key.size() : 1, ' ') << entry->summary << "\n";
    std::vector<std::string> traits = entry->declares;
    if (const Unsupported why = cli::device_unavailable(entry->device)) traits.push_back("cannot run here: " + *why);
    for (size_t i = 0; i < traits.size(); ++i) out << (i ? "; " : indent) << traits[i];
    if (!traits.empty()) out << "\n";
  };
  for (const auto& entry : StrategyRegistry::instance().all())
    if (entry->unit == TimedUnit::inference) print(entry.get());
  for (const auto& models : options.token_models) {
    std::string name = models->family().name();
    name.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(name.front())));
    out << "\n" << name << " strategies (--model=" << models->family().name() << "; one token per step):\n";
    for (const auto& entry : StrategyRegistry::instance().all())
      if (models->owns(*entry)) print(entry.get());
  }
  std::set<std::string> said;
  for (const UnsupportedCase& c : unsupported_cases(options)) {
    const std::string line = "  " + c.strategy + " at " + c.model + ", batch " + std::to_string(c.batch) + ": " + c.why;
    if (!said.insert(line).second) continue;
    if (said.size() == 1) out << "\nCases the flags select that a strategy cannot run (skipped, with this reason):\n";
    out << line << "\n";
  }
}

void register_cases(const std::vector<BenchmarkCase>& cases) {
  for (const BenchmarkCase& c : cases) register_timed_case(timed_case(c));
}

}  // namespace condbench
