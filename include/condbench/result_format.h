#pragma once
// What a result file promises its readers (docs/design.md §4): the schema version, and the
// benchmark name, built and read by one type so the runner, condbench-report and the peer agree.
//
//   early_exit/cpu/native/fused/exit:2/batch:64/hidden:1024/blocks:3
//   `-------- labels --------' `------------- axes (key:value) -------------'
//
// Labels are plain parts (family, device, engine, strategy); axes are key:value parts in order.
// The scenario is the axis keyed exit or mix. A reader keeps axes it does not know: a name with an
// extra axis is a different benchmark, never one to drop or to merge with another.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace condbench {

// Bumped when the meaning of names, counters or context keys changes; condbench-report checks it and
// reads every schema from kOldestResultSchema on. The Python peer writes the same value (rules.json).
// 2: one context key for every strategy (strategy_context_key), the decoder's no longer apart.
constexpr const char* kResultSchema = "2";
constexpr const char* kOldestResultSchema = "1";

// What one iteration of a benchmark is: an inference (every family) or a generated token (the
// decoder, docs/design.md §8), whose strategies are others of the same names.
enum class TimedUnit { inference, token };

// The context key that describes a strategy for the report's glossary, of its key
// ("cpu/native/fused") and its timed unit: "strategy:cpu/native/fused", and a decoder's
// "strategy:cpu/torch/masked per token". Schema 1 files said "decoder strategy:cpu/torch/masked"
// for the latter (kSchema1TokenStrategyContext), which the report still reads.
constexpr const char* kStrategyContext = "strategy:";
constexpr const char* kTokenStrategySuffix = " per token";
constexpr const char* kSchema1TokenStrategyContext = "decoder strategy:";
std::string strategy_context_key(const std::string& key, TimedUnit unit);
// The families a file's benchmarks are timed per generated token in, by name, separated by a comma
// and no space ("decoder", "decoder,ssm"): the report asks their groups a token's questions and describes their
// strategies apart. A file without it (condbench before this key) timed the decoder alone per token.
constexpr const char* kPerTokenContext = "condbench_per_token";
// The decoder family's name: --model=decoder, and model:decoder in benchmark names (docs/design.md §8).
constexpr const char* kDecoderFamily = "decoder";
// The process's peak resident memory (getrusage maxrss): condbench's and the peer's, each its own file.
constexpr const char* kPeakMemoryContext = "condbench_peak_resident_memory";
// The lockstep a file was timed in (python -m condbench.lockstep: its rounds in turns with another
// process's) and the drift allowance a pair across that lockstep's files gets ("1": none; a file of a
// lockstep without it was given none).
constexpr const char* kLockstepContext = "condbench_lockstep";
constexpr const char* kLockstepAllowanceContext = "condbench_lockstep_allowance";
// CONDBENCH_LOCKSTEP_ALLOWANCE, which the coordinator gives both processes: a number from 1 to this.
constexpr double kMaxLockstepAllowance = 10;

class BenchmarkName {
 public:
  struct Part {
    std::string key;  // empty for a label
    std::string value;
    bool operator==(const Part&) const = default;
  };

  BenchmarkName& label(std::string value);
  BenchmarkName& axis(std::string key, std::string value);

  // nullopt for a name that is not labels and key:value axes: an empty part, an empty key or
  // value, more than one ':' in a part.
  static std::optional<BenchmarkName> parse(std::string_view name);

  std::string str() const;  // parse(n.str()) == n, and parse(s)->str() == s
  const std::vector<Part>& parts() const { return parts_; }
  std::vector<std::string> labels() const;
  // The value of an axis, or nullopt.
  std::optional<std::string> axis_value(std::string_view key) const;
  // "exit:2" or "mix:early": the first axis keyed exit or mix; nullopt when there is none.
  std::optional<std::string> scenario() const;
  // The labels alone, joined: "early_exit/cpu/native/fused", what every configuration shares.
  std::string without_axes() const;

  bool operator==(const BenchmarkName& other) const { return str() == other.str(); }

 private:
  std::vector<Part> parts_;
};

// A run's name without Google Benchmark's "/real_time": the benchmark's name (a view into
// `run_name`: not to be kept past it).
std::string_view without_time_suffix(std::string_view run_name);

// What a condbench benchmark's name says, read once: the one reader of names. The runner's console,
// condbench-report and its --table take every fact of a name from here and never take a name apart
// themselves; the model is its list of axes, whatever the family, so a name with an axis no reader
// knows groups, sorts and prints like any other.
//
//   early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/<model axes...>
//   primitive/<device>/<name>
struct BenchmarkId {
  std::string name;  // as written, without Google Benchmark's "/real_time"
  bool primitive = false;
  std::string device;
  std::string engine, strategy;  // early_exit
  std::string primitive_name;    // primitive
  std::string scenario;          // exit:K (K of 1 to 4 digits) or mix:SHAPE
  int64_t batch = 0, blocks = 0;
  // The model: every axis but the scenario and the batch, in the name's order, its depth included:
  // hidden:64/blocks:3, or model:transformer/d_model:256/heads:4/ffn:1024/seq:32/blocks:6.
  std::vector<BenchmarkName::Part> model;

  std::string strategy_key() const { return engine + "/" + strategy; }
  // The labels, joined: "early_exit/cpu/native/fused" or "primitive/cuda/launch", what every
  // configuration of one strategy (or one primitive) shares.
  std::string without_axes() const;

  // nullopt for a name that is not condbench's (another library's benchmark in the same file);
  // throws condbench::Error for one that starts as condbench's and is malformed: no scenario, no
  // batch:N or blocks:N of 1 to 9 digits, or not labels and axes.
  static std::optional<BenchmarkId> read(std::string_view run_name);
};

// A model in words, from its axes alone: "hidden 64, 3 blocks",
// "transformer: d_model 256, heads 4, ffn 1024, seq 32, 6 blocks". An axis keyed model names the
// family; blocks is the depth; any other axis reads "key value", in the name's order.
std::string model_text(const std::vector<BenchmarkName::Part>& model);
// The same in a heading's few characters: "mlp h64 ×3", "transformer d256 a4 f1024 s32 ×6",
// "decoder v512 d256 a4 L8 f1024 c64 e2 p16 g32" (a letter per known size, an unknown axis as
// key=value, ×N the blocks, none for a model whose depth is its layers).
std::string model_short(const std::vector<BenchmarkName::Part>& model);
// The family the axes name (the first axis keyed model: "decoder"), or "" where none does (the mlp's).
std::string model_family(const std::vector<BenchmarkName::Part>& model);
// A key that sorts models by their axes in the name's order, numbers by value (64 before 256).
std::string model_order(const std::vector<BenchmarkName::Part>& model);
// exit:1, exit:2, ... then mix:early, mix:uniform, mix:late, then any other mix: the order of depth.
int scenario_rank(std::string_view scenario);

}  // namespace condbench
