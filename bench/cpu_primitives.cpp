#include "cpu_primitives.h"

#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "condbench/result_format.h"
#include "condbench/simd.h"

namespace condbench {

namespace {

using V = simd::Vec<simd::kLanes>;
constexpr int kLanes = simd::kLanes;

// One pass over `bytes` of floats, summed in 16 independent vector chains so that the adds never
// wait on each other and the loads are all that limit it. A buffer that fits a cache level is read
// from that level (every iteration reads the same buffer); the counter `bytes` says how much one
// iteration read, so the report divides it by the median time.
void read_bandwidth(benchmark::State& state, size_t bytes) {
  constexpr int kChains = 16;
  const size_t floats = bytes / sizeof(float) / (kChains * kLanes) * (kChains * kLanes);
  const std::vector<float> buffer(floats, 1.0f);
  for (auto _ : state) {
    V sum[kChains];
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) sum[c] = V{};
    for (size_t i = 0; i < floats; i += kChains * kLanes)
#pragma GCC unroll 16
      for (int c = 0; c < kChains; ++c) {
        V v;
        simd::load<kLanes>(v, buffer.data() + i + c * kLanes);
        sum[c] += v;
      }
    for (int c = 1; c < kChains; ++c) sum[0] += sum[c];
    benchmark::DoNotOptimize(sum[0]);
  }
  state.counters["bytes"] = static_cast<double>(floats * sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * floats * sizeof(float)));
}

// Multiply-adds in 12 independent chains of the widest vectors the build targets: enough in
// flight to cover the latency of two FMA pipes, few enough to stay in registers. The counter
// `flops` is one iteration's (2 per lane per multiply-add).
void fma_peak(benchmark::State& state) {
  constexpr int kChains = 12, kSteps = 4096;
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V{} + 0.001f * static_cast<float>(c);
  const V m = V{} + 0.999f, a = V{} + 0.0001f;  // converges: no overflow, no denormals
  for (auto _ : state) {
    for (int i = 0; i < kSteps; ++i)
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;
    benchmark::DoNotOptimize(acc);
  }
  state.counters["flops"] = 2.0 * kLanes * kChains * kSteps;
}

// The least a LibTorch operator costs: an out= add of one-element tensors, so there is no
// allocation and almost no arithmetic, only the dispatcher and the operator's checks.
void torch_op(benchmark::State& state) {
  const at::Tensor a = at::ones({1});
  at::Tensor out = at::empty({1});
  for (auto _ : state) {
    at::add_out(out, a, a);
    benchmark::DoNotOptimize(out.data_ptr<float>());
  }
}

template <typename Body>
void add(const std::string& name, Body body) {
  benchmark::RegisterBenchmark(BenchmarkName().label("primitive").label("cpu").label(name).str().c_str(), body)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_cpu_primitives() {
  // From L2-sized to DRAM-sized, in steps of 2 where caches end: the report takes, for a strategy
  // reading B bytes per inference, the rate of the largest buffer of at most B bytes (a smaller
  // buffer is read at least as fast, so the floor stays a floor).
  for (const int kib : {256, 1024, 2048, 4096, 8192, 16384, 65536, 262144})
    add("read_bandwidth_" + (kib < 1024 ? std::to_string(kib) + "KiB" : std::to_string(kib / 1024) + "MiB"),
        [kib](benchmark::State& s) { read_bandwidth(s, static_cast<size_t>(kib) << 10); });
  add("fma_peak", fma_peak);
  add("torch_op", torch_op);
}

}  // namespace condbench
