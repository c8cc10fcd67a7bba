#include "cli.h"

#include <ATen/Context.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "condbench/config.h"
#include "condbench/error.h"

namespace condbench::cli {

std::map<std::string, std::string> take_flags(int& argc, char** argv, const std::vector<std::string>& known,
                                              const std::vector<std::string>& switches) {
  std::map<std::string, std::string> flags;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const bool is_known = std::find(known.begin(), known.end(), name) != known.end();
    const bool is_switch = std::find(switches.begin(), switches.end(), name) != switches.end();
    if (!is_known && !is_switch) {
      argv[kept++] = argv[i];
      continue;
    }
    if (flags.count(name)) fail(name + ": given twice");
    if (is_switch) {
      if (eq != std::string::npos) fail(name + ": takes no value");
      flags[name] = "";
    } else if (eq == std::string::npos && i + 1 < argc && argv[i + 1][0] != '-') {
      flags[name] = argv[++i];  // --name value
    } else {
      if (eq == std::string::npos || eq + 1 == arg.size()) fail(name + ": needs a value (" + name + "=...)");
      flags[name] = arg.substr(eq + 1);
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return flags;
}

std::vector<std::string> split_list(const std::string& flag, const std::string& text, bool distinct) {
  std::vector<std::string> items;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) fail(flag + ": empty item in '" + printable(text) + "'");
    if (items.size() == kMaxListItems) fail(flag + ": more than " + std::to_string(kMaxListItems) + " values");
    // --batch=1,1 would register every benchmark twice under one name.
    if (distinct && !seen.insert(item).second) fail(flag + ": '" + printable(item) + "' is given twice");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) return true;
  return false;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(std::isdigit(text[0]) || text[0] == '-'))
    fail(flag + ": '" + printable(text) + "' is not an integer");
  if (value < lo || value > hi)
    fail(flag + ": " + text + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return value;
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  std::vector<int64_t> values;
  for (const std::string& item : split_list(flag, text, /*distinct=*/false)) {  // as numbers, below
    values.push_back(parse_int(flag, item, lo, hi));
    // 1 and 01 are one value
    if (std::count(values.begin(), values.end(), values.back()) > 1)
      fail(flag + ": " + std::to_string(values.back()) + " is given twice");
  }
  return values;
}

std::vector<int64_t> parse_batches(const std::string& text) { return parse_int_list("--batch", text, 1, kMaxBatch); }
int64_t parse_batch(const std::string& text) { return parse_int("--batch", text, 1, kMaxBatch); }

std::vector<std::vector<int>> size_combinations(const Family& family, const std::map<std::string, std::string>& flags,
                                                bool full) {
  const std::vector<FamilyAxis>& axes = family.axes();
  std::vector<std::vector<int>> lists;
  for (const FamilyAxis& axis : axes) {
    const auto flag = flags.find(axis.flag());
    std::vector<int>& values = lists.emplace_back();
    if (flag != flags.end())
      for (const int64_t v : parse_int_list(axis.flag(), flag->second, 1, axis.max))
        values.push_back(static_cast<int>(v));
    else if (!axis.scales_with.empty())
      values = {0};  // set below, from the other axis's value
    else
      values = full && !axis.full_runs.empty() ? axis.full_runs
               : !axis.runs.empty()            ? axis.runs
                                               : std::vector<int>{axis.fallback};
  }
  std::vector<std::vector<int>> out = {{}};
  for (const std::vector<int>& values : lists) {
    std::vector<std::vector<int>> next;
    for (const std::vector<int>& prefix : out)
      for (const int v : values) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  for (std::vector<int>& row : out)
    for (size_t i = 0; i < axes.size(); ++i)
      if (row[i] == 0)
        for (size_t j = 0; j < axes.size(); ++j)
          if (axes[j].key == axes[i].scales_with) row[i] = axes[i].scale * row[j];
  return out;
}

float parse_float(const std::string& flag, const std::string& text, float lo, float hi) {
  errno = 0;
  char* end = nullptr;
  const float value = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0' || std::isnan(value)) fail(flag + ": '" + printable(text) + "' is not a number");
  // strtof sets ERANGE on underflow too: 1e-50 is a fine (zero) threshold; only overflow is out of range.
  if (std::isinf(value) || (errno == ERANGE && std::abs(value) > 1.0f) || value < lo || value > hi) {
    std::ostringstream range;  // "[0, 1]": the bounds at their shortest
    range << "[" << lo << ", " << hi << "]";
    fail(flag + ": " + text + " is out of range " + range.str());
  }
  return value;
}

uint64_t parse_seed(const std::map<std::string, std::string>& flags, const std::string& flag, uint64_t fallback) {
  const auto it = flags.find(flag);
  return it == flags.end() ? fallback : static_cast<uint64_t>(parse_int(flag, it->second, 0, INT64_MAX));
}

std::vector<float> parse_thresholds(const std::map<std::string, std::string>& flags, int count) {
  const auto it = flags.find("--thresholds");
  const std::string each = "one per exit before the final one";
  if (it == flags.end()) fail("--thresholds: required, " + each + " (" + std::to_string(count) + " values in [0, 1])");
  std::vector<float> thresholds;
  for (const std::string& item : split_list("--thresholds", it->second, /*distinct=*/false))
    thresholds.push_back(parse_float("--thresholds", item, 0.0f, 1.0f));
  if (static_cast<int>(thresholds.size()) != count)
    fail("--thresholds: expected " + std::to_string(count) + " values (" + each + "), got " +
         std::to_string(thresholds.size()));
  return thresholds;
}

bool cuda_built() {
#if CONDBENCH_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_available() { return cuda_built() && at::hasCUDA(); }

Unsupported device_unavailable(Device device) {
  if (device == Device::cpu) return std::nullopt;
  if (!cuda_built()) return "this build of condbench has no CUDA support";
  if (!at::hasCUDA()) return "no CUDA device is visible";
  return std::nullopt;
}

std::vector<Device> default_devices() {
  if (cuda_available()) return {Device::cpu, Device::cuda};
  return {Device::cpu};
}

std::vector<Device> parse_devices(const std::string& flag, const std::string& text) {
  if (text == "cpu") return {Device::cpu};
  if (text == "cuda" || text == "all") {
    if (!cuda_built()) fail(flag + "=" + text + ": this build of condbench has no CUDA support");
    if (text == "cuda") return {Device::cuda};
    return {Device::cpu, Device::cuda};
  }
  fail(flag + ": expected cpu, cuda or all, got '" + printable(text) + "'");
}

std::vector<std::string> parse_strategies(const std::string& flag, const std::string& text) {
  std::vector<std::string> names = split_list(flag, text);
  for (const std::string& name : names)
    if (!StrategyRegistry::instance().knows(name)) {
      std::set<std::string> known;
      for (const auto& entry : StrategyRegistry::instance().all()) known.insert(entry->name);
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(flag + ": unknown strategy '" + printable(name) + "' (known: " + list +
           "; or a key --list prints, cpu/native/fused)");
    }
  return names;
}

}  // namespace condbench::cli
