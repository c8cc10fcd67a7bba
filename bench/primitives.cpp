// primitive/cuda/...: the floor each strategy is judged against (docs/design.md §4). Each one
// times the smallest thing a strategy pays for per inference or per stage.
#include <benchmark/benchmark.h>

#include "cli.h"
#include "condbench/cuda/primitives.h"
#include "condbench/cuda/resources.h"
#include "condbench/result_format.h"
#include "device_timing.h"

namespace condbench {

namespace {

using cuda::CaptureScope;

bool skip_without_gpu(benchmark::State& state) {
  if (cli::cuda_available()) return false;
  state.SkipWithError("skipped: no CUDA device on this machine");
  return true;
}

void sync(cudaStream_t stream) { CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream)); }

// Host enqueue cost of an empty kernel: no wait per launch; the queue is drained (untimed) every
// 1024 launches so it never fills.
void launch(benchmark::State& state) {
  const cuda::Stream stream = cuda::make_stream();
  int64_t n = 0;
  for (auto _ : state) {
    cuda::launch_empty(stream.get());
    if (++n % 1024 == 0) {
      state.PauseTiming();
      sync(stream.get());
      state.ResumeTiming();
    }
  }
  sync(stream.get());
}

void launch_sync(benchmark::State& state) {
  const cuda::Stream stream = cuda::make_stream();
  for (auto _ : state) {
    cuda::launch_empty(stream.get());
    sync(stream.get());
  }
}

void graph_launch_sync(benchmark::State& state) {
  const cuda::Stream stream = cuda::make_stream();
  cuda::Graph graph;
  {
    CaptureScope capture(stream.get());
    cuda::launch_empty(stream.get());
    graph = cuda::Graph(capture.end());
  }
  const cuda::GraphExec exec = cuda::instantiate(graph);
  for (auto _ : state) {
    CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.get()));
    sync(stream.get());
  }
}

// A graph of a kernel that sets a handle, then an IF node on it whose body is one empty kernel:
// the difference between taken and not taken is what a skipped stage saves.
void if_node_sync(benchmark::State& state, unsigned taken) {
  const cuda::Stream stream = cuda::make_stream(), body_stream = cuda::make_stream();
  cuda::Graph graph;
  {
    CaptureScope capture(stream.get());
    const cudaGraphConditionalHandle handle = cuda::make_condition(stream.get());
    cuda::launch_set_condition(handle, taken, stream.get());
    const cudaGraph_t body = cuda::add_conditional(stream.get(), handle, cudaGraphCondTypeIf);
    CaptureScope inside(body_stream.get(), body);
    cuda::launch_empty(body_stream.get());
    inside.end();
    graph = cuda::Graph(capture.end());
  }
  const cuda::GraphExec exec = cuda::instantiate(graph);
  for (auto _ : state) {
    CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.get()));
    sync(stream.get());
  }
}

// What `if tensor.item() > t` costs at the least: 4 bytes device -> host, then a stream sync.
template <bool Pinned>
void read4_sync(benchmark::State& state) {
  const cuda::Stream stream = cuda::make_stream();
  const cuda::DeviceBuffer<int> device_value(1);
  CONDBENCH_CUDA_CHECK(cudaMemsetAsync(device_value.get(), 0, sizeof(int), stream.get()));
  cuda::PinnedBuffer<int> pinned(1);
  int pageable = 0;
  int* target = Pinned ? pinned.get() : &pageable;
  for (auto _ : state) {
    CONDBENCH_CUDA_CHECK(
        cudaMemcpyAsync(target, device_value.get(), sizeof(int), cudaMemcpyDeviceToHost, stream.get()));
    sync(stream.get());
    benchmark::DoNotOptimize(*target);
  }
}

template <typename Body>
std::string add(const char* name, Body body) {
  const std::string full = BenchmarkName().label("primitive").label("cuda").label(name).str();
  benchmark::RegisterBenchmark(full.c_str(),
                               [body](benchmark::State& state) {
                                 if (skip_without_gpu(state)) return;
                                 try {
                                   body(state);
                                 } catch (const std::exception& e) {
                                   state.SkipWithError(e.what());
                                 }
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  return full;
}

}  // namespace

std::vector<std::string> register_cuda_primitives() {
  return {
      add("launch", launch),
      add("launch_sync", launch_sync),
      add("graph_launch_sync", graph_launch_sync),
      add("if_taken_sync", [](benchmark::State& s) { if_node_sync(s, 1); }),
      add("if_not_taken_sync", [](benchmark::State& s) { if_node_sync(s, 0); }),
      add("read4_pageable_sync", read4_sync<false>),
      add("read4_pinned_sync", read4_sync<true>),
  };
}

}  // namespace condbench
