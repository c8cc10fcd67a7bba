#pragma once
// condbench --export-workload=DIR: the exact work condbench benchmarks, as files another
// benchmark (the Python peer, python/condbench) can load, so both measure the same thing by
// construction: per model, the weights (a state_dict torch.load reads), the input pool (a tensor)
// and every scenario's thresholds (JSON).
#include <string>
#include <vector>

#include "benchmark_case.h"
#include "decoder_case.h"

namespace condbench {

// One subdirectory per model ("h64-b3"; a transformer "t256-a4-f1024-s32-b6"). Returns the directories written.
std::vector<std::string> export_workloads(const std::vector<BenchmarkCase>& cases, const std::string& dir);
// The decoder's (docs/design.md §8), one subdirectory per decoder model ("decoder-vocab512-..."):
// weights.pt, prompts.pt (the prompts a batch-1 case walks, int64 [sequences, prompt]) and
// workload.json (family "decoder", every size, the name axes and every scenario's thresholds).
std::vector<std::string> export_decoder_workloads(const std::vector<DecoderCase>& cases, const std::string& dir);

}  // namespace condbench
