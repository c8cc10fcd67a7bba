#include "registration.h"

#include <ATen/Parallel.h>

#include <algorithm>
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
    {"--batch", "N[,N...]", "rows per inference (default 1,64)"},
    {"--hidden", "N[,N...]", "hidden width (default 64,1024)"},
    {"--blocks", "N[,N...]", "blocks, the model's depth (default 3)"},
    {"--weights", "FILE", "a PyTorch state_dict (torch.save); the sizes come from it (default: seeded weights)"},
    {"--full", nullptr, "the full grid: batch 1,8,64,512, hidden 64,256,1024,4096, blocks 3,12"},
    {"--threads", "N", "LibTorch's intra-op threads (default: LibTorch's choice)"},
    {"--nvtx", "off|run|iter|stage", "NVTX ranges for Nsight Systems (default off)"},
    {"--trace", "FILE", "the NVTX ranges as a Chrome trace for Perfetto, without Nsight (--nvtx=stage unless given)"},
    {"--require-quiet", nullptr, "refuse to start on a busy machine (exit 2)"},
    {"--progress", nullptr, "progress and the time left on stderr even when it is not a terminal (default: on one)"},
    {"--in-order", nullptr, "repetitions in registration order (default: randomly interleaved)"},
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
         "Google Benchmark (README.md, \"Running\"). Flags take --name=value or --name value.\n\n"
         "condbench's flags:\n";
  for (const FlagSpec& f : kFlags) {
    const std::string form = std::string(f.name) + (f.value ? std::string("=") + f.value : "");
    out << "  " << form << std::string(form.size() < 32 ? 32 - form.size() : 1, ' ') << f.help << "\n";
  }
  out << "\nGoogle Benchmark's flags:\n";
}

RunnerOptions parse_runner_options(int& argc, char** argv) {
  const auto flags = cli::take_flags(argc, argv, flag_names(false), flag_names(true));
  auto given = [&](const char* name) { return flags.count(name) > 0; };
  RunnerOptions options;
  options.full = given("--full");
  options.require_quiet = given("--require-quiet");
  options.in_order = given("--in-order");
  options.list = given("--list");
  options.progress = given("--progress");
  if (options.full) {
    options.batches = {1, 8, 64, 512};
    options.hidden = {64, 256, 1024, 4096};
    options.blocks = {3, 12};
  }
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
  if (given("--batch")) options.batches = cli::parse_int_list("--batch", flags.at("--batch"), 1, 1 << 20);
  if (given("--hidden")) options.hidden = cli::parse_int_list("--hidden", flags.at("--hidden"), 1, 1 << 16);
  if (given("--blocks")) options.blocks = cli::parse_int_list("--blocks", flags.at("--blocks"), 1, 256);
  if (given("--trace")) {
    options.trace_out = flags.at("--trace");
    options.nvtx = nvtx::Level::stage;
  }
  if (given("--nvtx")) options.nvtx = nvtx::parse_level(flags.at("--nvtx"));
  if (given("--export-workload")) options.export_dir = flags.at("--export-workload");
  if (given("--checkpoint-out")) options.checkpoint_out = flags.at("--checkpoint-out");
  if (given("--threads"))
    options.threads = static_cast<int>(cli::parse_int("--threads", flags.at("--threads"), 1, 1024));
  if (given("--weights")) {
    if (given("--hidden") || given("--blocks"))
      fail("--weights: the model's sizes come from the file; drop --hidden and --blocks");
    options.weights = flags.at("--weights");
    // Read now, so an unreadable or malformed file is a flag error, not a skipped benchmark.
    const ModelConfig config = shared_model({ModelConfig{}, kDefaultWeightSeed, options.weights})->config();
    options.hidden = {config.hidden};
    options.blocks = {config.blocks};
  }
  if (given("--scenario")) {
    const int64_t deepest = *std::max_element(options.blocks.begin(), options.blocks.end());
    for (const std::string& text : cli::split_list("--scenario", flags.at("--scenario"))) {
      const Scenario scenario = Scenario::parse(text);
      if (!scenario.fits(static_cast<int>(deepest)))
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
  for (int64_t blocks : options.blocks)
    for (int64_t hidden : options.hidden) {
      ModelSource source;
      source.weights_path = options.weights;
      source.config.hidden = static_cast<int>(hidden);
      source.config.blocks = static_cast<int>(blocks);
      source.config = options.weights.empty() ? source.config : shared_model(source)->config();
      source.config.validate();
      const std::vector<Scenario> scenarios =
          options.scenarios.empty() ? all_scenarios(static_cast<int>(blocks)) : options.scenarios;
      for (int64_t batch : options.batches)
        for (const Scenario& scenario : scenarios) {
          // exit:K beyond this depth's final exit does not exist here; other depths may have it
          if (!scenario.fits(static_cast<int>(blocks))) continue;
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
    if (const Unsupported why = cli::device_unavailable(info.device)) add("cannot run here: " + *why);
    if (!traits.empty()) out << indent << traits << "\n";
  }
  bool headed = false;
  std::set<std::string> said;
  for (const BenchmarkCase& c : select_cases(options))
    if (const Unsupported why = c.strategy->unsupported(c.config, c.batch)) {
      std::ostringstream line;
      line << "  " << c.strategy->key() << " at hidden " << c.config.hidden << ", " << c.config.blocks
           << " blocks, batch " << c.batch << ": " << *why;
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
