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

// One pass over `bytes` of floats as 8 sequential streams (the buffer in eighths, read side by
// side), each summed in its own vector accumulator. One stream leaves the hardware prefetchers
// idle (it read a 16 MiB buffer at half the rate of eight on this project's reference machine);
// eight accumulators cover the adds' latency at two loads a cycle and stay in AVX2's sixteen
// registers (sixteen spilled, and read L1 a third slower), so the loads are all that limit it. A
// buffer that fits a cache level is read from that level (every iteration reads the same buffer);
// the counter `bytes` says how much one iteration read, so the report divides it by the median.
void read_bandwidth(benchmark::State& state, size_t bytes) {
  constexpr int kStreams = 8;
  const size_t per_stream = bytes / sizeof(float) / kStreams / kLanes * kLanes;
  const std::vector<float> buffer(per_stream * kStreams, 1.0f);
  for (auto _ : state) {
    V sum[kStreams];
#pragma GCC unroll 8
    for (V& s : sum) s = V{};
    for (size_t i = 0; i < per_stream; i += kLanes)
#pragma GCC unroll 8
      for (int s = 0; s < kStreams; ++s) {
        V v;
        simd::load<kLanes>(v, buffer.data() + s * per_stream + i);
        sum[s] += v;
      }
    // Unrolled like the loop, so the accumulators are registers, never stored back each step.
    V total = V{};
#pragma GCC unroll 8
    for (const V& s : sum) total += s;
    benchmark::DoNotOptimize(total);
  }
  state.counters["bytes"] = static_cast<double>(buffer.size() * sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffer.size() * sizeof(float)));
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
    V total = V{};
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) total += acc[c];
    benchmark::DoNotOptimize(total);
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
std::string add(const std::string& name, Body body) {
  const std::string full = BenchmarkName().label("primitive").label("cpu").label(name).str();
  benchmark::RegisterBenchmark(full.c_str(), body)->UseRealTime()->Unit(benchmark::kMicrosecond);
  return full;
}

}  // namespace

std::vector<std::string> register_cpu_primitives() {
  std::vector<std::string> names;
  // From L1-sized to DRAM-sized, in steps of 2 where caches end and of 1.5 or less across the
  // last-level cache's edge (32 MiB on the reference machine): the report takes, for a strategy
  // reading B bytes per inference, the read rate of the largest buffer no larger than B (a smaller
  // buffer is read at least as fast, so the floor stays a floor, and the closest one is the
  // tightest; CpuLimits::read_rate). A 26 MB decode step read at the 8 MiB rate would be credited
  // twice what this machine reads at its size.
  for (const int kib : {16, 64, 256, 1024, 2048, 4096, 8192, 16384, 24576, 32768, 49152, 65536, 262144})
    names.push_back(
        add("read_bandwidth_" + (kib < 1024 ? std::to_string(kib) + "KiB" : std::to_string(kib / 1024) + "MiB"),
            [kib](benchmark::State& s) { read_bandwidth(s, static_cast<size_t>(kib) << 10); }));
  names.push_back(add("fma_peak", fma_peak));
  names.push_back(add("torch_op", torch_op));
  return names;
}

}  // namespace condbench
