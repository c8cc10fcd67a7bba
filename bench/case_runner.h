#pragma once
// The one runner of every timed case (docs/design.md §4). A case kind — a family's inference
// (benchmark_case.cpp), a generated token (token_case.h: the decoder's) — says how a case is made
// ready and what one timed unit is; the runner owns the rest, once for every kind: the skip
// reasons, the prepared-case cache, NotRunnable remembered across repetitions, the test slowdown,
// the order counters (sequence, round), the GPU time of every CUDA case (gpu_us, gpu_span_us),
// --trace's GPU spans, and errors as skips.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "condbench/strategy.h"
#include "device_timing.h"

namespace condbench {

// A case made ready to time: its strategy prepared, its inputs on the device, and what the untimed
// pass learnt about each unit. As DeviceUnits it runs its units for the device timing.
class PreparedCase : public DeviceUnits {
 public:
  // The timed loop: one iteration, one unit. `slowdown` > 1: each unit spun out to that many
  // times its length (CONDBENCH_TEST_SLOWDOWN); time_units below is the loop every kind uses.
  virtual void time(benchmark::State& state, double slowdown) = 0;
  // The per-unit counters (kCounters' rows) and exit shares the untimed pass learnt, and the items
  // processed, written on the repetition.
  virtual void write_counters(benchmark::State& state) const = 0;
  // How its GPU time can be taken, from what the untimed pass learnt.
  virtual InferenceShape shape() const = 0;
};

// A registered case, as the runner sees it.
struct TimedCase {
  std::string name;
  Device device = Device::cpu;
  std::string strategy_path;                            // device/engine/strategy: the slowdown knob's key
  std::function<Unsupported()> why_skipped;             // no device, or what the strategy declares
  std::function<std::unique_ptr<PreparedCase>()> make;  // untimed; may throw NotRunnable
};

// Google Benchmark's function for every case: runs `c`, its errors become SkipWithError.
void run_timed_case(benchmark::State& state, const TimedCase& c);
// Registers `c` under its name: real time, microseconds.
benchmark::internal::Benchmark* register_timed_case(TimedCase c);

// The exit counters of every kind: exit_K, the share of rows (or row-tokens) leaving at exit K
// (`shares`, from exit 1), and exit_mean, the mean exit.
void write_exit_shares(benchmark::State& state, const std::vector<double>& shares);

// --rounds: the round the calls of Google Benchmark from now on belong to (0, 1, ...), written on each
// repetition as the "round" counter; -1: not in rounds, no counter.
void set_round(int64_t round);

// Destroys the case kept prepared between calls (its strategy, its inputs on the device). Called
// once the benchmarks have run, before main returns: left to static destruction, a CUDA strategy
// would outlive the CUDA runtime and crash the exit (seen on an H200: SIGSEGV after the last
// benchmark, or LibTorch's "CUDA error" abort from a CUDA graph's destructor).
void release_prepared_case();

// The timed loop of every kind: per iteration, `next()` readies the unit outside the timing where
// it must (a decoder's new sequence: it pauses the timer itself), then `unit()` is timed. With a
// slowdown, each unit is spun out until it has taken `slowdown` times as long (the clock reads make
// it a little more); two instantiations, so an ordinary run's loop holds no test for the knob.
template <bool kSlowdown, typename Next, typename Unit>
void time_units_as(benchmark::State& state, double slowdown, Next& next, Unit& unit) {
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    next();
    [[maybe_unused]] Clock::time_point start;
    if constexpr (kSlowdown) start = Clock::now();
    unit();
    if constexpr (kSlowdown) {
      const auto until = start + std::chrono::duration_cast<Clock::duration>((Clock::now() - start) * slowdown);
      while (Clock::now() < until) {
      }
    }
  }
}

template <typename Next, typename Unit>
void time_units(benchmark::State& state, double slowdown, Next&& next, Unit&& unit) {
  if (slowdown > 1.0)
    time_units_as<true>(state, slowdown, next, unit);
  else
    time_units_as<false>(state, slowdown, next, unit);
}

}  // namespace condbench
