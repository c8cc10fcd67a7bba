#pragma once
// The machine and software a run was made on, as (key, value) pairs: condbench puts them in the
// Google Benchmark JSON context (docs/design.md §4) and condbench-infer in its output.
#include <string>
#include <utility>
#include <vector>

namespace condbench {

std::vector<std::pair<std::string, std::string>> run_context();
std::string cpu_model();

struct RunnerOptions;   // registration.h
struct BenchmarkFlags;  // benchmark_flags.h
// condbench's context: run_context(), then how the run was made — --benchmark_context's entries,
// the interleaving, the selection ("suite", or the flags that selected part of it: scripts/run
// keeps such a run from replacing a full one as results/latest), the test knobs (`slowdown`,
// `twins`: "" when unset), NVTX, the weights and each model's provenance. The context of what it
// ran (packages built ahead, machine checks) is added as the run learns it.
std::vector<std::pair<std::string, std::string>> runner_context(const RunnerOptions& options,
                                                                const BenchmarkFlags& flags,
                                                                const std::string& slowdown, const std::string& twins);

}  // namespace condbench
