#include "case_runner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "condbench/error.h"
#include "condbench/nvtx.h"
#include "test_slowdown.h"

namespace condbench {

namespace {

// GPU time per repetition: a quarter of its units, within these bounds.
constexpr int kGpuTimedUnits = 200;
constexpr int kGpuTimedUnitsMin = 16;
// With --trace, this many units of each case are also placed on the trace's GPU track.
constexpr int kTracedGpuUnits = 16;

int64_t current_round = -1;  // set_round

// The case kept made between Google Benchmark's calls: in order, every call of a case finds it
// made; interleaved, it is made again. One at a time, so memory holds one strategy's buffers.
struct Current {
  std::string name;
  std::unique_ptr<PreparedCase> prepared;
};

Current& current() {
  static Current kept;
  return kept;
}

PreparedCase& prepared(const TimedCase& c) {
  Current& kept = current();
  if (kept.name == c.name && kept.prepared) return *kept.prepared;
  kept = Current{};  // the previous case's buffers go before the next one's are made
  kept.prepared = c.make();
  kept.name = c.name;  // complete: a failure above leaves no half-made case behind
  return *kept.prepared;
}

void run(benchmark::State& state, const TimedCase& c) {
  if (const Unsupported why = c.why_skipped()) {
    state.SkipWithError(("skipped: " + *why).c_str());
    return;
  }
  PreparedCase& p = prepared(c);
  const nvtx::ScopedRange run_range(nvtx::Level::run, c.name);
  p.time(state, test_slowdown(c.strategy_path));
  p.write_counters(state);
  // Where this repetition stands in the run's order: Google Benchmark calls a case once per
  // iteration count it tries and once per repetition, and keeps the last call's counters, so the
  // numbers that reach the file rise with time (not by one).
  static int64_t sequence = 0;
  state.counters["sequence"] = static_cast<double>(sequence++);
  if (current_round >= 0) state.counters["round"] = static_cast<double>(current_round);
  if (c.device != Device::cuda) return;
  // GPU time from CUDA events, for every CUDA case, measured after each repetition's timed loop so
  // the events cost it nothing: a figure per repetition, so the report has an interval of it as of
  // wall time. A quarter of the repetition's units, within [kGpuTimedUnitsMin, kGpuTimedUnits].
  const InferenceShape shape = p.shape();
  const int units = static_cast<int>(
      std::clamp<int64_t>(static_cast<int64_t>(state.iterations()) / 4, kGpuTimedUnitsMin, kGpuTimedUnits));
  if (const std::optional<double> gpu = gpu_time_us(p, units, shape))
    // One name per meaning: device time back to back, or a host-waiting unit's span on the GPU's timeline.
    state.counters[shape.waits_on_host ? "gpu_span_us" : "gpu_us"] = *gpu;
  // --trace: a few units' spans on the GPU, on a track of their own beside the host's ranges; once per case
  static std::set<std::string> traced;
  if (nvtx::records_spans() && nvtx::level() >= nvtx::Level::iter && traced.insert(c.name).second)
    for (const auto& [start, end] : gpu_spans_ns(p, kTracedGpuUnits))
      nvtx::record_span(nvtx::kGpuTrack, "inference", start, end);
}

}  // namespace

void run_timed_case(benchmark::State& state, const TimedCase& c) {
  // Cases whose strategy found while being made that it cannot run the model, and why: Google
  // Benchmark calls a case again for each repetition, and the answer will not change.
  static std::map<std::string, std::string> not_runnable;
  if (const auto known = not_runnable.find(c.name); known != not_runnable.end()) {
    state.SkipWithError(("skipped: " + known->second).c_str());
    return;
  }
  try {
    run(state, c);
  } catch (const NotRunnable& e) {
    current() = Current{};
    state.SkipWithError(("skipped: " + not_runnable.emplace(c.name, one_line(e)).first->second).c_str());
  } catch (const std::exception& e) {
    current() = Current{};  // a case that failed is made afresh if it is run again
    const std::string what = e.what();
    state.SkipWithError(("error: " + what.substr(0, what.find('\n'))).c_str());
  }
}

benchmark::internal::Benchmark* register_timed_case(TimedCase c) {
  const std::string name = c.name;
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [c = std::move(c)](benchmark::State& state) { run_timed_case(state, c); })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

void set_round(int64_t round) { current_round = round; }

void release_prepared_case() { current() = Current{}; }

void write_exit_shares(benchmark::State& state, const std::vector<double>& shares) {
  double exit_mean = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    state.counters["exit_" + std::to_string(k + 1)] = shares[k];
    exit_mean += static_cast<double>(k + 1) * shares[k];
  }
  state.counters["exit_mean"] = exit_mean;
}

}  // namespace condbench
