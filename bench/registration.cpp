#include "registration.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "cli.h"
#include "condbench/error.h"

namespace condbench {

namespace {

// condbench's own flags, each defined once: what parses them and what --help prints.
struct FlagSpec {
  const char* name;
  const char* value;  // the value's form; nullptr for a switch
  const char* help;   // one line, with the default
};
constexpr FlagSpec kFlags[] = {
    {"--device", "cpu|cuda|all", "devices to run (default: cpu, and cuda where a GPU is)"},
    {"--strategy", "NAME[,NAME...]", "strategies by name (default: all; --list shows them)"},
    {"--scenario", "S[,S...]", "exit:K or mix:early|uniform|late (default: every one of each depth)"},
    {"--batch", "N[,N...]", "rows per inference (default 1,64 for the mlp, 1,8 for the transformer)"},
    {"--model", "mlp|transformer[,...]", "model families (default both; docs/models.md)"},
    {"--hidden", "N[,N...]", "mlp hidden width (default 64,1024)"},
    {"--d-model", "N[,N...]", "transformer width (default 256)"},
    {"--heads", "N", "transformer attention heads; a state_dict cannot say (default 4)"},
    {"--ffn", "N", "transformer feed-forward width (default 4 x d_model)"},
    {"--seq", "N", "transformer tokens per row (default 32)"},
    {"--blocks", "N[,N...]", "the model's depth: mlp blocks, transformer layers (default 3 and 6)"},
    {"--weights", "FILE", "a PyTorch state_dict (torch.save); family and sizes come from it (default: seeded weights)"},
    {"--full", nullptr,
     "the full grid: mlp batch 1,8,64,512, hidden 64,256,1024,4096, blocks 3,12; BERT-base transformer too"},
    {"--threads", "N", "LibTorch's intra-op threads (default: LibTorch's choice)"},
    {"--nvtx", "off|run|iter|stage", "NVTX ranges for Nsight Systems (default off)"},
    {"--trace", "FILE", "the NVTX ranges as a Chrome trace for Perfetto, without Nsight (--nvtx=stage unless given)"},
    {"--require-quiet", nullptr, "refuse to start on a busy machine (exit 2)"},
    {"--progress", nullptr, "progress and the time left on stderr even when it is not a terminal (default: on one)"},
    {"--in-order", nullptr, "repetitions in registration order (default: randomly interleaved)"},
    {"--answer-budget", "SECONDS",
     "after the run, interleaved rounds over the answer's undecided comparisons until decided (default 0: none)"},
    {"--checkpoint-out", "FILE", "Google Benchmark JSON of every finished benchmark, as they finish"},
    {"--export-workload", "DIR", "write weights, input pool and thresholds for the Python peer; run nothing"},
    {"--list", nullptr, "the strategies, what they declare, and what they cannot run here; run nothing"},
};

std::vector<std::string> flag_names(bool switches) {
  std::vector<std::string> names;
  for (const FlagSpec& f : kFlags)
    if ((f.value == nullptr) == switches) names.emplace_back(f.name);
  return names;
}

}  // namespace

void print_flags(std::ostream& out) {
  out << "condbench: data-dependent exits of an early-exit model, written each way a PyTorch user can, under\n"
         "Google Benchmark (docs/running.md). Flags take --name=value or --name value.\n\n"
         "condbench's flags:\n";
  for (const FlagSpec& f : kFlags) {
    const std::string form = std::string(f.name) + (f.value ? std::string("=") + f.value : "");
    out << "  " << form << std::string(form.size() < 32 ? 32 - form.size() : 1, ' ') << f.help << "\n";
  }
  out << "\nGoogle Benchmark's flags:\n";
}

namespace {

std::vector<ModelFamily> parse_families(const std::string& flag, const std::string& text) {
  std::vector<ModelFamily> families;
  for (const std::string& name : cli::split_list(flag, text)) {
    if (name == "mlp") {
      families.push_back(ModelFamily::mlp);
    } else if (name == "transformer") {
      families.push_back(ModelFamily::transformer);
    } else {
      fail(flag + ": unknown model family '" + name + "' (mlp, transformer)");
    }
  }
  return families;
}

bool selects(const std::vector<ModelFamily>& families, ModelFamily family) {
  return std::find(families.begin(), families.end(), family) != families.end();
}

// The models the flags select, each with its batches (docs/design.md §4).
std::vector<ModelSelection> select_models(const std::map<std::string, std::string>& flags, bool full,
                                          const std::vector<ModelFamily>& families) {
  auto given = [&](const char* name) { return flags.count(name) > 0; };
  auto ints = [&](const char* name, std::vector<int64_t> otherwise, int64_t hi) {
    return given(name) ? cli::parse_int_list(name, flags.at(name), 1, hi) : otherwise;
  };
  auto one = [&](const char* name, int64_t otherwise, int64_t hi) {
    return static_cast<int>(given(name) ? cli::parse_int(name, flags.at(name), 1, hi) : otherwise);
  };
  for (const char* flag : {"--hidden"})
    if (given(flag) && !selects(families, ModelFamily::mlp))
      fail(std::string(flag) + ": sets the mlp; --model does not select it");
  for (const char* flag : {"--d-model", "--heads", "--ffn", "--seq"})
    if (given(flag) && !selects(families, ModelFamily::transformer))
      fail(std::string(flag) + ": sets the transformer; --model does not select it");

  std::vector<ModelSelection> models;
  const std::vector<int64_t> batches =
      given("--batch") ? cli::parse_int_list("--batch", flags.at("--batch"), 1, 1 << 20) : std::vector<int64_t>{};
  if (selects(families, ModelFamily::mlp)) {
    const auto hidden =
        ints("--hidden", full ? std::vector<int64_t>{64, 256, 1024, 4096} : std::vector<int64_t>{64, 1024}, 1 << 16);
    const auto blocks = ints("--blocks", full ? std::vector<int64_t>{3, 12} : std::vector<int64_t>{3}, 256);
    const std::vector<int64_t> mlp_batches = !batches.empty() ? batches
                                             : full           ? std::vector<int64_t>{1, 8, 64, 512}
                                                              : std::vector<int64_t>{1, 64};
    for (int64_t b : blocks)
      for (int64_t h : hidden) {
        ModelSelection m;
        m.config.hidden = static_cast<int>(h);
        m.config.blocks = static_cast<int>(b);
        m.batches = mlp_batches;
        models.push_back(m);
      }
  }
  if (selects(families, ModelFamily::transformer)) {
    const auto widths = ints("--d-model", {ModelConfig::transformer().d_model}, 1 << 14);
    const auto blocks = ints("--blocks", {ModelConfig::transformer().blocks}, 256);
    const std::vector<int64_t> transformer_batches = !batches.empty() ? batches : std::vector<int64_t>{1, 8};
    for (int64_t b : blocks)
      for (int64_t d : widths) {
        ModelSelection m;
        m.config = ModelConfig::transformer();
        m.config.d_model = static_cast<int>(d);
        m.config.heads = one("--heads", m.config.heads, 1024);
        m.config.ffn = one("--ffn", 4 * d, 1 << 16);
        m.config.seq = one("--seq", m.config.seq, 1 << 14);
        m.config.blocks = static_cast<int>(b);
        m.batches = transformer_batches;
        models.push_back(m);
      }
    if (full) {  // BERT-base's encoder: what an early-exit model people ship (DeeBERT) exits between
      ModelSelection bert;
      bert.config = ModelConfig::transformer();
      bert.config.d_model = 768;
      bert.config.heads = 12;
      bert.config.ffn = 3072;
      bert.config.blocks = 12;
      bert.config.seq = 128;
      bert.batches = transformer_batches;
      models.push_back(bert);
    }
  }
  for (const ModelSelection& m : models) m.config.validate();
  return models;
}

}  // namespace

RunnerOptions parse_runner_options(int& argc, char** argv) {
  const auto flags = cli::take_flags(argc, argv, flag_names(false), flag_names(true));
  auto given = [&](const char* name) { return flags.count(name) > 0; };
  RunnerOptions options;
  options.full = given("--full");
  options.require_quiet = given("--require-quiet");
  options.in_order = given("--in-order");
  options.list = given("--list");
  options.progress = given("--progress");
  options.devices = given("--device") ? cli::parse_devices("--device", flags.at("--device")) : cli::default_devices();
  if (given("--strategy")) {
    options.strategies = cli::parse_strategies("--strategy", flags.at("--strategy"));
    for (const std::string& name : options.strategies) {
      std::string runs_on;  // the devices `name` is registered on
      bool selected = false;
      for (const StrategyInfo& info : StrategyRegistry::instance().entries())
        if (info.name == name && runs_on.find(to_string(info.device)) == std::string::npos) {
          runs_on += (runs_on.empty() ? "" : ", ") + std::string(to_string(info.device));
          selected |= std::find(options.devices.begin(), options.devices.end(), info.device) != options.devices.end();
        }
      if (!selected) fail("--strategy: " + name + " runs on " + runs_on + " only, which --device does not select");
    }
  }
  if (given("--trace")) {
    options.trace_out = flags.at("--trace");
    options.nvtx = nvtx::Level::stage;
  }
  if (given("--nvtx")) options.nvtx = nvtx::parse_level(flags.at("--nvtx"));
  for (const char* output : {"--trace", "--export-workload", "--checkpoint-out"})
    if (given(output) && flags.at(output).empty()) fail(std::string(output) + ": needs a name");
  if (given("--export-workload")) options.export_dir = flags.at("--export-workload");
  if (given("--checkpoint-out")) options.checkpoint_out = flags.at("--checkpoint-out");
  if (given("--answer-budget")) {
    options.answer_budget_s = cli::parse_float("--answer-budget", flags.at("--answer-budget"), 0, 86400);
    if (options.in_order && options.answer_budget_s > 0)
      fail("--answer-budget: its rounds are interleaved; drop --in-order");
  }
  if (given("--threads"))
    options.threads = static_cast<int>(cli::parse_int("--threads", flags.at("--threads"), 1, 1024));
  if (given("--weights")) {
    for (const char* sized : {"--hidden", "--blocks", "--d-model", "--ffn", "--model"})
      if (given(sized)) fail(std::string("--weights: the model's family and sizes come from the file; drop ") + sized);
    options.weights = flags.at("--weights");
    // Read now, so an unreadable or malformed file is a flag error, not a skipped benchmark.
    ModelSource source;
    source.weights_path = options.weights;
    source.config.heads = static_cast<int>(given("--heads") ? cli::parse_int("--heads", flags.at("--heads"), 1, 1024)
                                                            : source.config.heads);
    source.config.seq =
        static_cast<int>(given("--seq") ? cli::parse_int("--seq", flags.at("--seq"), 1, 1 << 14) : source.config.seq);
    ModelSelection m;
    m.config = shared_model(source)->config();
    const bool mlp = m.config.family == ModelFamily::mlp;
    if (mlp && (given("--heads") || given("--seq")))
      fail(std::string("--weights: the file holds an mlp; --heads and --seq are the transformer's"));
    m.batches = given("--batch") ? cli::parse_int_list("--batch", flags.at("--batch"), 1, 1 << 20)
                : mlp            ? std::vector<int64_t>{1, 64}
                                 : std::vector<int64_t>{1, 8};
    options.models = {m};
  } else {
    // Without --model, a family's own sizes select it alone (--hidden: the mlp; --d-model, --heads,
    // --ffn, --seq: the transformer), so a command line of the mlp runs what it always ran.
    std::vector<ModelFamily> families;
    if (given("--model")) {
      families = parse_families("--model", flags.at("--model"));
    } else {
      if (given("--hidden")) families.push_back(ModelFamily::mlp);
      for (const char* flag : {"--d-model", "--heads", "--ffn", "--seq"})
        if (given(flag) && !selects(families, ModelFamily::transformer)) families.push_back(ModelFamily::transformer);
      if (families.empty()) families = {ModelFamily::mlp, ModelFamily::transformer};
    }
    options.models = select_models(flags, options.full, families);
  }
  if (given("--scenario")) {
    int deepest = 0;
    for (const ModelSelection& m : options.models) deepest = std::max(deepest, m.config.blocks);
    for (const std::string& text : cli::split_list("--scenario", flags.at("--scenario"))) {
      const Scenario scenario = Scenario::parse(text);
      if (!scenario.fits(deepest))
        fail("--scenario: " + text + " needs a model of at least " + std::to_string(scenario.forced_exit() - 1) +
             " blocks (the deepest given has " + std::to_string(deepest) + ")");
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
  auto wanted = [&](const StrategyInfo& info) {
    if (std::find(options.devices.begin(), options.devices.end(), info.device) == options.devices.end()) return false;
    return options.strategies.empty() ||
           std::find(options.strategies.begin(), options.strategies.end(), info.name) != options.strategies.end();
  };
  for (const ModelSelection& model : options.models) {
    ModelSource source;
    source.weights_path = options.weights;
    source.config = model.config;
    const int blocks = model.config.blocks;
    const std::vector<Scenario> scenarios = options.scenarios.empty() ? all_scenarios(blocks) : options.scenarios;
    for (int64_t batch : model.batches)
      for (const Scenario& scenario : scenarios) {
        // exit:K beyond this depth's final exit does not exist here; other depths may have it
        if (!scenario.fits(blocks)) continue;
        for (const StrategyInfo& info : StrategyRegistry::instance().entries())
          if (wanted(info)) cases.push_back({&info, source, source.config, batch, scenario});
      }
  }
  if (cases.empty()) fail("no benchmark matches the flags given (--device, --strategy, --scenario)");
  return cases;
}

void print_strategies(const RunnerOptions& options, std::ostream& out) {
  constexpr size_t kKeyWidth = 30;
  const std::string indent(kKeyWidth, ' ');
  for (const StrategyInfo& info : StrategyRegistry::instance().entries()) {
    const std::string key = info.key();
    out << key << std::string(key.size() < kKeyWidth ? kKeyWidth - key.size() : 1, ' ') << info.summary << "\n";
    std::string traits;
    const auto add = [&](const std::string& trait) { traits += (traits.empty() ? "" : "; ") + trait; };
    if (info.host_decides) add("decides on the host");
    if (info.single_launch) add("one launch per inference");
    if (info.skips_blocks_on_device) add("skips blocks on the device");
    if (const Unsupported why = cli::device_unavailable(info.device)) add("cannot run here: " + *why);
    if (!traits.empty()) out << indent << traits << "\n";
  }
  bool headed = false;
  std::set<std::string> said;
  for (const BenchmarkCase& c : select_cases(options))
    if (const Unsupported why = c.strategy->unsupported(c.config, c.batch)) {
      std::ostringstream line;
      line << "  " << c.strategy->key() << " at " << c.config.describe() << ", batch " << c.batch << ": " << *why;
      if (!said.insert(line.str()).second) continue;
      if (!headed) out << "\nCases the flags select that a strategy cannot run (skipped, with this reason):\n";
      headed = true;
      out << line.str() << "\n";
    }
}

void register_cases(const std::vector<BenchmarkCase>& cases) {
  for (const BenchmarkCase& c : cases)
    benchmark::RegisterBenchmark(c.name().c_str(), [c](benchmark::State& state) { run_benchmark_case(state, c); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace condbench
