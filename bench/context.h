#pragma once
// The machine and software a run was made on, as (key, value) pairs: condbench puts them in the
// Google Benchmark JSON context (docs/design.md §4) and condbench-infer in its output.
#include <string>
#include <utility>
#include <vector>

namespace condbench {

std::vector<std::pair<std::string, std::string>> run_context();
std::string cpu_model();

}  // namespace condbench
