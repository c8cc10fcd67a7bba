#pragma once
// What the report's tests share: the small fixture (tests/report/fixtures/small.json), a group
// built from samples, a result file of one series.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis.h"
#include "result_file.h"

namespace condbench::report::test_support {

// tests/report/fixtures/small.json
std::string fixture_path();

// A group of one model (hidden 64, 3 blocks) at batch 1 on "cuda · X", from samples per
// (strategy, scenario), its cells interleaved (no drift allowance).
Group group_of(const std::map<std::pair<std::string, std::string>, std::vector<double>>& samples);

// A result file of one benchmark, early_exit/x, with these times (µs).
ResultFile one_series(const std::vector<double>& times);

}  // namespace condbench::report::test_support
