#include "condbench/result_format.h"

namespace condbench {

BenchmarkName& BenchmarkName::label(std::string value) {
  parts_.push_back({"", std::move(value)});
  return *this;
}

BenchmarkName& BenchmarkName::axis(std::string key, std::string value) {
  parts_.push_back({std::move(key), std::move(value)});
  return *this;
}

std::optional<BenchmarkName> BenchmarkName::parse(std::string_view name) {
  BenchmarkName out;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(name.find('/', begin), name.size());
    const std::string_view part = name.substr(begin, end - begin);
    const size_t colon = part.find(':');
    if (part.empty()) return std::nullopt;
    if (colon == std::string_view::npos) {
      out.label(std::string(part));
    } else {
      const std::string_view key = part.substr(0, colon), value = part.substr(colon + 1);
      if (key.empty() || value.empty() || value.find(':') != std::string_view::npos) return std::nullopt;
      out.axis(std::string(key), std::string(value));
    }
    if (end == name.size()) return out;
    begin = end + 1;
  }
}

std::string BenchmarkName::str() const {
  std::string out;
  for (const Part& p : parts_) {
    if (!out.empty()) out += '/';
    out += p.key.empty() ? p.value : p.key + ":" + p.value;
  }
  return out;
}

std::vector<std::string> BenchmarkName::labels() const {
  std::vector<std::string> out;
  for (const Part& p : parts_)
    if (p.key.empty()) out.push_back(p.value);
  return out;
}

std::optional<std::string> BenchmarkName::axis_value(std::string_view key) const {
  for (const Part& p : parts_)
    if (!p.key.empty() && p.key == key) return p.value;
  return std::nullopt;
}

std::optional<std::string> BenchmarkName::scenario() const {
  for (const Part& p : parts_)
    if (p.key == "exit" || p.key == "mix") return p.key + ":" + p.value;
  return std::nullopt;
}

std::string BenchmarkName::without_axes() const {
  std::string out;
  for (const std::string& l : labels()) out += (out.empty() ? "" : "/") + l;
  return out;
}

}  // namespace condbench
