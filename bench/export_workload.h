#pragma once
// condbench --export-workload=DIR: the exact work condbench benchmarks, as files another
// benchmark (the Python peer, bench/python) can load, so both measure the same thing by
// construction: per model, the weights (a state_dict torch.load reads), the input pool (a tensor)
// and every scenario's thresholds (JSON).
#include <string>
#include <vector>

#include "benchmark_case.h"

namespace condbench {

// One subdirectory per model ("h64-b3"; a transformer "t256-a4-f1024-s32-b6"). Returns the directories written.
std::vector<std::string> export_workloads(const std::vector<BenchmarkCase>& cases, const std::string& dir);

}  // namespace condbench
