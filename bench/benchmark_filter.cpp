// Compiled with -Wno-maybe-uninitialized under GCC (CMakeLists.txt): GCC 12 warns falsely inside
// <regex> at -O2 with the sanitizers. std::regex, not POSIX regcomp, because it is what Google
// Benchmark matches with: the two grammars differ on escapes and unbalanced parentheses.
#include "benchmark_filter.h"

#include <regex>
#include <string_view>

namespace condbench {

namespace {

bool selects_all(const std::string& filter) { return filter.empty() || filter == "all"; }

std::string_view pattern_of(const std::string& filter) {
  return filter[0] == '-' ? std::string_view(filter).substr(1) : std::string_view(filter);
}

}  // namespace

std::optional<std::string> filter_error(const std::string& filter) {
  if (selects_all(filter)) return std::nullopt;
  try {
    const std::regex pattern(pattern_of(filter).begin(), pattern_of(filter).end(), std::regex::extended);
  } catch (const std::regex_error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

size_t count_selected(const std::vector<std::string>& names, const std::string& filter) {
  if (selects_all(filter) || filter_error(filter)) return names.size();
  const bool negative = filter[0] == '-';
  const std::regex pattern(pattern_of(filter).begin(), pattern_of(filter).end(), std::regex::extended);
  size_t selected = 0;
  for (const std::string& name : names) selected += std::regex_search(name + "/real_time", pattern) != negative ? 1 : 0;
  return selected;
}

}  // namespace condbench
