// The one runner of every timed case (bench/case_runner.h), on cases of the test's own: what it asks
// of a case — its GPU time wherever the case is a CUDA one, never elsewhere —, what it writes on
// every repetition, and how a case that cannot run, or fails, is skipped. And a family timed per
// token of the test's own, beside the decoder: what a second stateful family would reuse.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "case_runner.h"
#include "condbench/decoder/strategy.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "condbench/token_strategy.h"
#include "runner_options.h"
#include "token_case.h"
#include "token_models.h"

namespace condbench {
namespace {

// What the runner did with one test case.
struct Seen {
  int made = 0;
  int timed = 0;
  int counters_written = 0;
  int streams_asked = 0;
  double slowdown = 0;
};

class CountingCase final : public PreparedCase {
 public:
  explicit CountingCase(Seen& seen, bool throws_in_time) : seen_(seen), throws_(throws_in_time) {}
  void time(benchmark::State& state, double slowdown) override {
    ++seen_.timed;
    seen_.slowdown = slowdown;
    if (throws_) throw Error("the unit failed\nsecond line");
    time_units(
        state, slowdown, [] {}, [this] { ++units_; });
  }
  void write_counters(benchmark::State& state) const override {
    ++seen_.counters_written;
    state.counters["units_seen"] = static_cast<double>(units_);
  }
  InferenceShape shape() const override { return {}; }
  // No stream: the runner asks, and records no GPU time.
  std::optional<void*> cuda_stream() override {
    ++seen_.streams_asked;
    return std::nullopt;
  }
  void run_next() override {}
  void finish() override {}

 private:
  Seen& seen_;
  bool throws_;
  int64_t units_ = 0;
};

// Collects every run the benchmarks report: name -> the last run's counters and error.
class Collector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      Result& r = results[run.run_name.function_name];
      ++r.repetitions;
      r.error = run.error_message;
      for (const auto& [key, counter] : run.counters) r.counters[key].push_back(counter.value);
    }
  }
  struct Result {
    int repetitions = 0;
    std::string error;
    std::map<std::string, std::vector<double>> counters;
  };
  std::map<std::string, Result> results;
};

class CaseRunner : public ::testing::Test {
 protected:
  // Google Benchmark's registry is global: each test starts from an empty one (--gtest_repeat).
  void SetUp() override { benchmark::ClearRegisteredBenchmarks(); }
  // Registers a case named test/<name> (each test's names are its own), three iterations a
  // repetition, `repetitions` of them.
  void add(const std::string& name, Device device, Seen& seen, std::function<Unsupported()> why_skipped = {},
           bool not_runnable = false, bool throws_in_time = false) {
    TimedCase c;
    c.name = "case_runner_test/" + name;
    c.device = device;
    c.strategy_path = "cpu/native/none";
    c.why_skipped = why_skipped ? why_skipped : [] { return Unsupported{}; };
    c.make = [&seen, not_runnable, throws_in_time]() -> std::unique_ptr<PreparedCase> {
      ++seen.made;
      if (not_runnable) throw NotRunnable("the model has no such part");
      return std::make_unique<CountingCase>(seen, throws_in_time);
    };
    register_timed_case(std::move(c))->Iterations(3)->Repetitions(repetitions);
  }
  Collector run(const std::string& filter) {
    Collector collector;
    benchmark::RunSpecifiedBenchmarks(&collector, "^case_runner_test/" + filter + "(/|$)");  // then /iterations:3
    release_prepared_case();
    return collector;
  }
  int repetitions = 2;
};

TEST_F(CaseRunner, AsksEveryCudaCaseForItsGpuTimeAndNoOtherCase) {
  Seen cuda, cpu;
  add("gpu_asked/cuda", Device::cuda, cuda);
  add("gpu_asked/cpu", Device::cpu, cpu);
  const Collector ran = run("gpu_asked/.*");
  // once a repetition, where the build has CUDA (a CPU-only build, as the asan preset, times no GPU)
  EXPECT_EQ(cuda.streams_asked, CONDBENCH_CUDA ? 2 : 0);
  EXPECT_EQ(cpu.streams_asked, 0);
  for (const char* name : {"case_runner_test/gpu_asked/cuda", "case_runner_test/gpu_asked/cpu"}) {
    const Collector::Result& r = ran.results.at(name);
    EXPECT_EQ(r.repetitions, 2) << name;
    EXPECT_EQ(r.error, "") << name;
    EXPECT_EQ(r.counters.count("gpu_us") + r.counters.count("gpu_span_us"), 0U) << name;  // no stream, no time
    EXPECT_EQ(r.counters.at("units_seen"), (std::vector<double>{3, 6})) << name;          // one case, kept made
    ASSERT_EQ(r.counters.at("sequence").size(), 2U) << name;
    EXPECT_LT(r.counters.at("sequence")[0], r.counters.at("sequence")[1]) << name;
    EXPECT_EQ(r.counters.count("round"), 0U) << name;
  }
  EXPECT_EQ(cuda.slowdown, 1.0);  // no knob set
}

TEST_F(CaseRunner, WritesTheRoundInRounds) {
  Seen seen;
  repetitions = 1;
  add("round", Device::cpu, seen);
  set_round(3);
  const Collector ran = run("round");
  set_round(-1);
  EXPECT_EQ(ran.results.at("case_runner_test/round").counters.at("round"), std::vector<double>{3});
}

TEST_F(CaseRunner, ACaseThatCannotRunIsSkippedWithItsReasonAndNotRemade) {
  Seen declared, found;
  // the runner remembers what a case found for the whole process: a name of this test's run of its
  // own (--gtest_repeat)
  static int runs = 0;
  const std::string found_name = "skip/found" + std::to_string(runs++);
  add("skip/declared", Device::cpu, declared, [] { return Unsupported("runs one row at a time"); });
  add(found_name, Device::cpu, found, {}, /*not_runnable=*/true);
  const Collector ran = run("skip/.*");
  EXPECT_EQ(declared.made, 0);
  EXPECT_EQ(ran.results.at("case_runner_test/skip/declared").error, "skipped: runs one row at a time");
  EXPECT_EQ(found.made, 1);  // what a case found while being made is remembered across repetitions
  EXPECT_EQ(ran.results.at("case_runner_test/" + found_name).error, "skipped: the model has no such part");
}

TEST_F(CaseRunner, AFailingCaseIsAnErrorOfOneLineAndMadeAfreshNextTime) {
  Seen seen;
  add("fails", Device::cpu, seen, {}, false, /*throws_in_time=*/true);
  const Collector ran = run("fails");
  EXPECT_EQ(ran.results.at("case_runner_test/fails").error, "error: the unit failed");
  EXPECT_EQ(seen.made, 2);  // each repetition made it again
  EXPECT_EQ(seen.counters_written, 0);
}

// A second family timed per token, of the test's own: two layers, an exit after the first, whose
// confidence is the model's for every row; the next token is the input plus the exit it left at.
struct ToyConfig {
  int vocab = 7;
  int context = 8;
  int prompt = 2;
  int generate = 3;
  int num_exits() const { return 2; }
  int step_position(int step) const { return prompt - 1 + step; }
  std::vector<std::pair<std::string, std::string>> name_axes() const {
    return {{"model", "toy"}, {"vocab", std::to_string(vocab)}, {"blocks", "1"}};
  }
  std::string describe() const { return "vocab=" + std::to_string(vocab); }
  std::string tag() const { return "toy-v" + std::to_string(vocab); }
  MemoryNeed memory_need(int64_t /*rows*/) const { return {}; }
  void validate() const {}
};
struct ToyModel {
  using Config = ToyConfig;
  ToyConfig config;
  FlatParameters params;
  float confidence = 0.5f;
};
static_assert(TokenModel<ToyModel> && TokenModel<DecoderModel>);
using ToyInfo = TokenStrategyInfo<ToyModel>;

class ToyStrategy final : public TokenStrategy<ToyModel> {
 public:
  using TokenStrategy::TokenStrategy;
  static constexpr bool kHostDecides = true;

 protected:
  void do_prepare(const ToyModel& model, int64_t /*batch*/) override { confidence_ = model.confidence; }
  void do_start(const at::Tensor& prompt) override { expected_ = prompt.select(1, prompt.size(1) - 1).clone(); }
  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int /*position*/) override {
    // the case chains each step to the last one's tokens, from the prompt's last
    if (!input.equal(expected_)) ++chain_breaks;
    const int exit = math::exit_fires(confidence_, thresholds.at(0)) ? 1 : 2;
    const int64_t rows = input.size(0);
    out_.exit_id = at::full({rows}, exit, at::kInt);
    out_.token = (input + exit).remainder(config().vocab);
    out_.logits = at::zeros({rows, config().vocab});
    record().host_syncs = 1;
    record().layers_run = static_cast<double>(rows * exit);
    record().heads_run = static_cast<double>(rows * exit);
    expected_ = out_.token;
    return out_;
  }

 public:
  static inline int chain_breaks = 0;

 private:
  float confidence_ = 0;
  TokenOutput out_;
  at::Tensor expected_;
};

const ToyModel& toy_model(const ToyConfig& /*config*/) {
  static const ToyModel model;
  return model;
}
const std::vector<float>& toy_thresholds(const ToyConfig& /*config*/, const Scenario& scenario) {
  static std::map<std::string, std::vector<float>> thresholds;
  return thresholds[scenario.str()] = forced_thresholds(1, scenario.forced_exit());
}
at::Tensor toy_prompts(const ToyConfig& config, int64_t batch) {  // two sequences
  return at::arange(2 * batch * config.prompt, at::kLong).reshape({2, batch, config.prompt});
}

TEST(TokenFamily, TheRegistryTellsItsStrategiesFromTheDecodersThoughBothAreTimedPerToken) {
  StrategyRegistry registry;
  registry.add(
      describe_entry<ToyInfo, ToyStrategy>("toy_host", Engine::torch, Device::cpu, "the toy, decided on the host"));
  ASSERT_EQ(registry.of<ToyInfo>().size(), 1U);
  EXPECT_EQ(registry.of<ToyInfo>().front().get().declares, std::vector<std::string>{"decides on the host"});
  EXPECT_TRUE(registry.of<DecoderStrategyInfo>().empty());
  EXPECT_TRUE(registry.of<StrategyInfo>().empty());
  EXPECT_EQ(registry.find<DecoderStrategyInfo>(Device::cpu, Engine::torch, "toy_host"), nullptr);
  EXPECT_NE(registry.find<ToyInfo>(Device::cpu, Engine::torch, "toy_host"), nullptr);
  // and in the binary's registry, the decoder's strategies are none of a toy's
  EXPECT_FALSE(StrategyRegistry::instance().of<DecoderStrategyInfo>().empty());
  EXPECT_TRUE(StrategyRegistry::instance().of<ToyInfo>().empty());
}

TEST(TokenFamily, ItsCasesRunOnTheOneRunnerWithEachTokensCountersAndExitShares) {
  static const std::unique_ptr<const StrategyEntry> entry =
      describe_entry<ToyInfo, ToyStrategy>("toy_host", Engine::torch, Device::cpu, "the toy, decided on the host");
  const auto& info = dynamic_cast<const ToyInfo&>(*entry);
  std::vector<TokenCase<ToyModel>> cases;
  for (int exit : {1, 2}) cases.push_back({&info, ToyConfig{}, 2, Scenario::forced(exit)});
  benchmark::ClearRegisteredBenchmarks();
  const TokenWork<ToyModel> work{&toy_model, &toy_thresholds, &toy_prompts, nullptr, nullptr};  // no runner's
  for (benchmark::internal::Benchmark* b : register_token_cases(cases, work))
    b->Iterations(7)->Repetitions(2);  // two sequences and a third begun; made again, warmed, for the second
  Collector ran;
  benchmark::RunSpecifiedBenchmarks(&ran, "^early_exit/cpu/torch/toy_host/");
  release_prepared_case();
  for (int exit : {1, 2}) {
    const std::string name =
        "early_exit/cpu/torch/toy_host/exit:" + std::to_string(exit) + "/batch:2/model:toy/vocab:7/blocks:1";
    ASSERT_EQ(ran.results.count(name), 1U) << name;
    const Collector::Result& r = ran.results.at(name);
    const std::vector<double> depth(2, static_cast<double>(exit));
    EXPECT_EQ(r.error, "") << name;
    EXPECT_EQ(r.repetitions, 2) << name;
    EXPECT_EQ(r.counters.at("exit_" + std::to_string(exit)), std::vector<double>(2, 1.0)) << name;
    EXPECT_EQ(r.counters.at("exit_" + std::to_string(3 - exit)), std::vector<double>(2, 0.0)) << name;
    EXPECT_EQ(r.counters.at("exit_mean"), depth) << name;
    EXPECT_EQ(r.counters.at("layers_run"), depth) << name;                        // per row's token
    EXPECT_EQ(r.counters.at("host_syncs"), std::vector<double>(2, 1.0)) << name;  // per token
    ASSERT_EQ(r.counters.at("sequence").size(), 2U) << name;
    EXPECT_LT(r.counters.at("sequence")[0], r.counters.at("sequence")[1]) << name;
  }
  EXPECT_EQ(ToyStrategy::chain_breaks, 0);
}

// condbench's runner knows a family timed per token only through its entry (token_families.cpp):
// the decoder's models from its size flags, at --batch's batches, and each model's cases and
// export folder.
TEST(TokenFamily, TheRunnerSelectsTheDecodersModelsThroughItsEntryAlone) {
  const std::shared_ptr<const TokenModels> models =
      token_family(decoder_family()).select({{"--vocab", "64,128"}, {"--layers", "4"}, {"--batch", "1,2"}}, false);
  EXPECT_EQ(&models->family(), &decoder_family());
  EXPECT_EQ(models->deepest(), 1);  // 4 layers, an exit every 2: exits 1 and 2
  EXPECT_NO_THROW(models->require_memory());
  try {  // the key/value cache of 65536 rows of the default decoder
    token_family(decoder_family()).select({{"--batch", "65536"}}, false)->require_memory();
    ADD_FAILURE() << "65536 rows fit the memory budget";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch 65536 of the decoder vocab=512"), std::string::npos) << e.what();
  }
  RunnerOptions options;
  options.devices = {Device::cpu};
  const auto decoders = StrategyRegistry::instance().of<DecoderStrategyInfo>();
  const auto on_cpu = std::count_if(decoders.begin(), decoders.end(),
                                    [](const DecoderStrategyInfo& info) { return info.device == Device::cpu; });
  ASSERT_GT(on_cpu, 0);
  for (const auto& entry : StrategyRegistry::instance().all())  // every token strategy is a listed family's
    EXPECT_EQ(models->owns(*entry), entry->unit == TimedUnit::token) << entry->key();
  // 2 models x 2 batches x (exit:1, exit:2 and the three mixes) per strategy on the CPU
  const std::vector<std::string> names = models->case_names(options);
  EXPECT_EQ(names.size(), static_cast<size_t>(on_cpu) * 2 * 2 * 5);
  EXPECT_EQ(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.find("/batch:2/model:decoder/vocab:128/") != n.npos; }),
            on_cpu * 5);
  options.scenarios = {Scenario::forced(2)};
  std::vector<std::string> tags;
  for (const ExportedModel& model : models->exported(options)) tags.push_back(model.name);
  DecoderConfig small;
  small.layers = 4;
  std::vector<std::string> expected;
  for (const int vocab : {128, 64}) expected.push_back(DecoderConfig(small).set("vocab", vocab).tag());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(tags, expected);
  // a family that is not timed per token has no entry
  EXPECT_THROW(token_family(*families().front()), Error);
}

}  // namespace
}  // namespace condbench
