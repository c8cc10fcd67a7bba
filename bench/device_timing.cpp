#include "device_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#if CONDBENCH_CUDA
#include "condbench/cuda/resources.h"
#include "condbench/cuda/stream_hold.h"
#include "condbench/paired_scope.h"
#endif

namespace condbench {

namespace {
// Kernels a held stream may queue: a few hundred, well under the depth at which the host would
// block in a launch (the hardware queue is finite).
constexpr int64_t kMaxHeldKernels = 256;
}  // namespace

int64_t held_group(const InferenceShape& shape, int64_t count) {
  // Kernels per counted launch, at most: an ATen operator launches one or a few; an AOTInductor
  // package run, tens of generated ones.
  const int64_t weight = shape.engine == Engine::native ? 1 : shape.engine == Engine::torch ? 4 : 32;
  const int64_t kernels = std::max<int64_t>(1, shape.launches_per_inference) * weight;
  return std::clamp<int64_t>(kMaxHeldKernels / kernels, 1, std::max<int64_t>(1, count));
}

double hold_timeout_s(const InferenceShape& shape, int64_t inferences) {
  constexpr double kBaseSeconds = 0.02, kPerKernelSeconds = 150e-6;
  const int64_t weight = shape.engine == Engine::native ? 1 : shape.engine == Engine::torch ? 4 : 32;
  const int64_t kernels =
      std::max<int64_t>(1, shape.launches_per_inference) * weight * std::max<int64_t>(1, inferences);
  return kBaseSeconds + kPerKernelSeconds * static_cast<double>(kernels);
}

#if CONDBENCH_CUDA

void synchronize_cuda_device() { CONDBENCH_CUDA_CHECK(cudaDeviceSynchronize()); }

namespace {

double elapsed_ms(const cuda::Event& start, const cuda::Event& stop) {
  float ms = 0.0f;
  CONDBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

// Readies the next unit, with a restart where the units ready have run out (outside any events,
// and finished, so that a held stream never waits behind a prefill).
void ready_one(DeviceUnits& units) {
  if (units.ready() > 0) return;
  units.restart();
  units.finish();
}

}  // namespace

std::optional<double> gpu_time_us(DeviceUnits& units, int count, const InferenceShape& shape) {
  const std::optional<void*> handle = units.cuda_stream();
  if (!handle || count <= 0) return std::nullopt;
  const auto stream = static_cast<cudaStream_t>(*handle);
  const cuda::Event start = cuda::make_event(true), stop = cuda::make_event(true);
  double total_ms = 0.0;
  if (shape.waits_on_host) {
    for (int i = 0; i < count; ++i) {
      ready_one(units);
      CONDBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
      units.run_next();
      CONDBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
      CONDBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      total_ms += elapsed_ms(start, stop);
    }
    units.finish();
    return 1000.0 * total_ms / count;
  }
  const int64_t group = held_group(shape, count);
  cuda::StreamHold hold;
  for (int done = 0; done < count;) {
    ready_one(units);
    const int n = static_cast<int>(std::min({group, static_cast<int64_t>(count - done), units.ready()}));
    {
      // Released on every way out: a unit that throws must not leave the stream held until the
      // kernel's timeout.
      PairedScope held([&] { hold.hold(stream, hold_timeout_s(shape, n)); }, [&] { hold.release(); },
                       [&]() noexcept { hold.release(); });
      CONDBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
      for (int i = 0; i < n; ++i) units.run_next();
      CONDBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
      held.close();
    }
    CONDBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    if (hold.timed_out()) {
      units.finish();
      return std::nullopt;  // the host blocked while the stream was held: not a GPU-only time
    }
    total_ms += elapsed_ms(start, stop);
    done += n;
  }
  units.finish();
  return 1000.0 * total_ms / count;
}

std::vector<std::pair<int64_t, int64_t>> gpu_spans_ns(DeviceUnits& units, int count) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  const std::optional<void*> handle = units.cuda_stream();
  if (!handle || count <= 0) return spans;
  const auto stream = static_cast<cudaStream_t>(*handle);
  const cuda::Event reference = cuda::make_event(true);
  std::vector<cuda::Event> starts, stops;
  for (int i = 0; i < count; ++i) {
    starts.push_back(cuda::make_event(true));
    stops.push_back(cuda::make_event(true));
  }
  units.finish();
  CONDBENCH_CUDA_CHECK(cudaEventRecord(reference.get(), stream));
  CONDBENCH_CUDA_CHECK(cudaEventSynchronize(reference.get()));
  const int64_t reference_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  for (int i = 0; i < count; ++i) {
    ready_one(units);
    CONDBENCH_CUDA_CHECK(cudaEventRecord(starts[i].get(), stream));
    units.run_next();
    CONDBENCH_CUDA_CHECK(cudaEventRecord(stops[i].get(), stream));
  }
  units.finish();
  for (int i = 0; i < count; ++i)
    spans.emplace_back(reference_ns + std::llround(elapsed_ms(reference, starts[i]) * 1e6),
                       reference_ns + std::llround(elapsed_ms(reference, stops[i]) * 1e6));
  return spans;
}

#else

void synchronize_cuda_device() {}

std::vector<std::pair<int64_t, int64_t>> gpu_spans_ns(DeviceUnits&, int) { return {}; }

std::optional<double> gpu_time_us(DeviceUnits&, int, const InferenceShape&) { return std::nullopt; }

std::vector<std::string> register_cuda_primitives() { return {}; }

#endif

}  // namespace condbench
