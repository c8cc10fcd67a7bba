#include "test_slowdown.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "condbench/error.h"
#include "condbench/strategy.h"

namespace condbench {

namespace {

// The comma-separated items of a knob's value; none for an empty value.
std::vector<std::string> items_of(const std::string& text) {
  std::vector<std::string> items;
  for (size_t start = 0; !text.empty() && start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::map<std::string, double> parse(const std::string& text) {
  std::map<std::string, double> factors;
  for (const std::string& item : items_of(text)) {
    const size_t colon = item.rfind(':');
    char* end = nullptr;
    errno = 0;
    const double factor = colon == std::string::npos ? NAN : std::strtod(item.c_str() + colon + 1, &end);
    if (colon == std::string::npos || colon == 0 || !end || *end != '\0' || errno ||
        !(factor >= 1.0 && factor <= 100.0))
      fail("CONDBENCH_TEST_SLOWDOWN: '" + printable(item) +
           "' is not device/engine/strategy:FACTOR with FACTOR in [1, 100]");
    factors[item.substr(0, colon)] = factor;
  }
  return factors;
}

}  // namespace

std::string test_slowdown_setting() {
  const char* value = std::getenv("CONDBENCH_TEST_SLOWDOWN");
  return value ? value : "";
}

double test_slowdown(const std::string& strategy_path) {
  static const std::map<std::string, double> factors = parse(test_slowdown_setting());
  auto it = factors.find(strategy_path);
  return it == factors.end() ? 1.0 : it->second;
}

std::string register_test_twins() {
  const char* value = std::getenv("CONDBENCH_TEST_TWIN");
  const std::string setting = value ? value : "";
  StrategyRegistry& registry = StrategyRegistry::instance();
  std::vector<StrategyInfo> twins;
  for (const std::string& item : items_of(setting)) {
    if (item.rfind("python/", 0) == 0) continue;  // the PyTorch peer's, python/<variant>: it reads them itself
    const StrategyInfo* original = nullptr;
    for (const StrategyInfo& info : registry.of<StrategyInfo>())
      if (info.key() == item) original = &info;
    if (!original)
      fail("CONDBENCH_TEST_TWIN: '" + printable(item) +
           "' is not a registered device/engine/strategy of a family's inference");
    StrategyInfo twin = *original;
    twin.name += "_twin";
    twin.summary = "the same code as " + original->name + ", registered twice (CONDBENCH_TEST_TWIN)";
    twins.push_back(std::move(twin));
  }
  for (StrategyInfo& twin : twins) registry.add(std::make_unique<StrategyInfo>(std::move(twin)));
  return setting;
}

}  // namespace condbench
