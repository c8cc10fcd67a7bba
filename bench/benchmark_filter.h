#pragma once
// Google Benchmark's --benchmark_filter as Google Benchmark 1.7.1 reads it: a std::regex of the
// extended grammar, searched in each benchmark's name (with its "/real_time" suffix: every
// benchmark of condbench times real time), negated by a leading '-'; "" and "all" select everything.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace condbench {

// Why Google Benchmark cannot read `filter` (std::regex's words), or nullopt when it can.
std::optional<std::string> filter_error(const std::string& filter);
// How many of `names` (as registered) the filter selects; every one for a filter it cannot read.
size_t count_selected(const std::vector<std::string>& names, const std::string& filter);

}  // namespace condbench
