#include "context.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <fstream>

#include "benchmark_flags.h"
#include "cli.h"
#include "condbench/counters.h"
#include "condbench/family.h"
#include "condbench/nvtx.h"
#include "condbench/result_format.h"
#include "condbench/strategy_registry.h"
#include "lockstep.h"
#include "revision.h"
#include "runner_options.h"

#if CONDBENCH_CUDA
#include "condbench/cuda/device_info.h"
#include "condbench/torch_cuda.h"
#endif

#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

namespace condbench {

namespace {
std::string cuda_version_text(long version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
}  // namespace

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::vector<std::pair<std::string, std::string>> run_context() {
  const auto& hooks = at::detail::getCUDAHooks();
#if CONDBENCH_CUDA
  const cuda::DeviceInfo gpu = cuda::device_info();
#else
  struct {
    std::string device_name = "none", driver_version = "none";
    std::string runtime_version;
  } gpu;
  gpu.runtime_version = hooks.hasCUDART() ? cuda_version_text(hooks.versionCUDART()) : "none";
#endif
  std::vector<std::pair<std::string, std::string>> context = {
    {"condbench_version", kVersion},
    {"condbench_schema", kResultSchema},
    {kPerTokenContext, per_token_family_names()},
    {"git_revision", kGitRevision},
    {"build_type", kBuildType},
    {"torch_version", TORCH_VERSION},
    {"cuda_build", cli::cuda_built() ? "yes" : "no"},
    {"cuda_runtime_version", gpu.runtime_version},
    {"cuda_driver_version", gpu.driver_version},
    {"device_name", gpu.device_name},
    {"torch_cuda_runtime_version", hooks.hasCUDART() ? cuda_version_text(hooks.versionCUDART()) : "none"},
    {"cpu_model", cpu_model()},
#if CONDBENCH_CUDA
    {"torch_conditional_capture", torch_cuda::conditional_capture_route()},
#else
    {"torch_conditional_capture", "none"},
#endif
    {"threads", std::to_string(at::get_num_threads())},
    // LibTorch's float32 matmuls (its cuBLAS calls): TF32 changes both the numerics and the speed.
    {"torch_tf32_cublas", at::globalContext().allowTF32CuBLAS() ? "on" : "off"},
  };
#if CONDBENCH_CUDA
  for (const auto& entry : gpu.state) context.push_back(entry);
#endif
  // So do the strategies (their registration's summary), for the report's glossary:
  // "strategy:cpu/native/fused" -> "the whole early-exit forward in one hand-written loop nest: ...",
  // a decoder's "strategy:cpu/torch/masked per token" -> ...
  for (const auto& entry : StrategyRegistry::instance().all())
    context.emplace_back(entry->context_key(), entry->summary);
  // The counters describe themselves in the file (condbench/counters.h): "counter:launches" ->
  // "launches; work the host issued: ...".
  for (const CounterSpec& spec : kCounters)
    context.emplace_back("counter:" + std::string(spec.name),
                         std::string(spec.unit) + "; " + std::string(spec.meaning));
  return context;
}

std::vector<std::pair<std::string, std::string>> runner_context(const RunnerOptions& options,
                                                                const BenchmarkFlags& flags,
                                                                const std::string& slowdown, const std::string& twins) {
  std::vector<std::pair<std::string, std::string>> context = flags.context;
  for (auto& entry : run_context()) context.push_back(std::move(entry));
  context.emplace_back("condbench_interleaving", !flags.interleaved ? "in order"
                                                 : options.rounds   ? "rounds"
                                                                    : "random");
  std::string selection;
  for (const std::string& flag : options.selecting) selection += (selection.empty() ? "" : ", ") + flag;
  if (!flags.filter.empty()) selection += (selection.empty() ? "" : ", ") + std::string("--benchmark_filter");
  context.emplace_back("condbench_selection", selection.empty() ? "suite" : "part: " + selection);
  if (!slowdown.empty()) context.emplace_back("condbench_test_slowdown", slowdown);
  if (!twins.empty()) context.emplace_back("condbench_test_twin", twins);
  // Timed in turns with another process (the peer): the report judges the two files' cells together.
  if (const Lockstep* turns = lockstep()) {
    context.emplace_back(kLockstepContext, turns->id());
    context.emplace_back(kLockstepAllowanceContext, turns->allowance());
  }
  context.emplace_back("nvtx", nvtx::level_name(options.nvtx));
  // The profiler costs every call: a file it recorded is for kernel tables, not for timings.
  if (!options.kernel_trace_out.empty()) context.emplace_back("condbench_kernel_trace", options.kernel_trace_out);
  const bool seeded = std::any_of(options.models.begin(), options.models.end(),
                                  [](const ModelSelection& m) { return m.config.family->state_dict() != nullptr; });
  context.emplace_back("weights", !options.weights.empty() ? options.weights
                                  : seeded                 ? "seeded"
                                                           : "the model file's own");
  for (const ModelSelection& m : options.models)
    for (auto& entry : m.config.family->provenance()) context.push_back(std::move(entry));
  return context;
}

}  // namespace condbench
