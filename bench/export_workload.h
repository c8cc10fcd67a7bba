#pragma once
// condbench --export-workload=DIR: the exact work condbench benchmarks, as files another
// benchmark (the Python peer, python/condbench) can load, so both measure the same thing by
// construction: per model, the weights (a state_dict torch.load reads), the input pool (a tensor)
// and every scenario's thresholds (JSON).
#include <string>
#include <vector>

#include "benchmark_case.h"
#include "token_models.h"

namespace condbench {

// One folder per model the cases run ("h64-b3"; a transformer "t256-a4-f1024-s32-b6"): its weights,
// its input pool, every scenario's thresholds and the rows each walks. A family timed per token
// gives its own (TokenModels::exported).
std::vector<ExportedModel> exported_models(const std::vector<BenchmarkCase>& cases);
// Writes each model's folder under `dir`, each whole or not at all: a failed export removes `dir`
// where it made it, and leaves a `dir` that was there with the folders written before the failure.
// Two models of one name are refused before anything is written. Returns the folders written.
std::vector<std::string> export_models(const std::vector<ExportedModel>& models, const std::string& dir);

}  // namespace condbench
