// primitive/cuda/...: the floor each strategy is judged against (docs/design.md §4). Each one
// times the smallest thing a strategy pays for per inference or per stage.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAGuard.h>

#include "cli.h"
#include "condbench/cuda/primitives.h"
#include "condbench/cuda/resources.h"
#include "condbench/result_format.h"
#include "device_timing.h"

namespace condbench {

namespace {

using cuda::CaptureScope;

bool skip_without_gpu(benchmark::State& state) {
  const Unsupported why = cli::device_unavailable(Device::cuda);
  if (why) state.SkipWithError(("skipped: " + *why).c_str());
  return why.has_value();
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

// Replays a captured graph and waits for it, once an iteration: what every graph primitive times.
void time_graph(benchmark::State& state, const cuda::Graph& graph, cudaStream_t stream) {
  const cuda::GraphExec exec = cuda::instantiate(graph);
  for (auto _ : state) {
    CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
    sync(stream);
  }
}

// A graph of `kernels` empty kernels, one after the other. One (graph_launch_sync) is a graph
// launch's floor; two (graph_two_kernels_sync) add a kernel node, so that an IF node's own cost is
// if_not_taken_sync (its set kernel, then an IF that runs nothing) less that.
void empty_kernels_sync(benchmark::State& state, int kernels) {
  const cuda::Stream stream = cuda::make_stream();
  cuda::Graph graph;
  {
    CaptureScope capture(stream.get());
    for (int k = 0; k < kernels; ++k) cuda::launch_empty(stream.get());
    graph = cuda::Graph(capture.end());
  }
  time_graph(state, graph, stream.get());
}

// A graph of a kernel that sets a handle to `value`, then a conditional node of `type` with
// `bodies` bodies of one empty kernel each. An IF (one body, run for a non-zero value): taken
// against not taken is what a skipped stage saves. An IF-ELSE (two bodies, the first for a non-zero
// value; CUDA 12.8+): what one node costs where the decoder's graph_cond had a pair of
// complementary IFs. A SWITCH (body `value`, none when it is out of range; CUDA 12.8+): what one
// node costs where the decoder's graph_while had an IF per exit.
void conditional_sync(benchmark::State& state, cudaGraphConditionalNodeType type, unsigned bodies, unsigned value) {
  const cuda::Stream stream = cuda::make_stream(), body_stream = cuda::make_stream();
  cuda::Graph graph;
  {
    CaptureScope capture(stream.get());
    const cudaGraphConditionalHandle handle = cuda::make_condition(stream.get());
    cuda::launch_set_condition(handle, value, stream.get());
    for (const cudaGraph_t body : cuda::add_conditional(stream.get(), handle, type, bodies)) {
      CaptureScope inside(body_stream.get(), body);
      cuda::launch_empty(body_stream.get());
      inside.end();
    }
    graph = cuda::Graph(capture.end());
  }
  time_graph(state, graph, stream.get());
}

// One LibTorch operator on a one-element CUDA tensor (at::add_), as the CPU's torch_op times it on
// the CPU: the host's cost of dispatching one ATen call that launches one kernel, without waiting
// for it. The queue is drained (untimed) every 1024 calls, as in `launch`. With it, a torch-engine
// cell's host floor is launches x torch_op (+ host_syncs x read4_pinned_sync).
void torch_op(benchmark::State& state) {
  const cuda::Stream stream = cuda::make_stream();
  const c10::cuda::CUDAStreamGuard on(at::cuda::getStreamFromExternal(stream.get(), c10::cuda::current_device()));
  at::Tensor a = at::ones({1}, at::TensorOptions().device(at::kCUDA));
  const at::Tensor b = at::ones({1}, at::TensorOptions().device(at::kCUDA));
  sync(stream.get());
  int64_t n = 0;
  for (auto _ : state) {
    a.add_(b);
    if (++n % 1024 == 0) {
      state.PauseTiming();
      sync(stream.get());
      state.ResumeTiming();
    }
  }
  sync(stream.get());
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
                                   state.SkipWithError((std::string("error: ") + e.what()).c_str());
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
      add("graph_launch_sync", [](benchmark::State& s) { empty_kernels_sync(s, 1); }),
      add("if_taken_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeIf, 1, 1); }),
      add("if_not_taken_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeIf, 1, 0); }),
      add("graph_two_kernels_sync", [](benchmark::State& s) { empty_kernels_sync(s, 2); }),
      add("if_else_then_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeIf, 2, 1); }),
      add("if_else_else_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeIf, 2, 0); }),
      add("switch_taken_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeSwitch, 4, 3); }),
      add("switch_none_sync", [](benchmark::State& s) { conditional_sync(s, cudaGraphCondTypeSwitch, 4, 4); }),
      add("torch_op", torch_op),
      add("read4_pageable_sync", read4_sync<false>),
      add("read4_pinned_sync", read4_sync<true>),
  };
}

}  // namespace condbench
