#include "result_file.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "analysis.h"
#include "condbench/error.h"
#include "condbench/result_format.h"

namespace condbench::report {

namespace {

double to_microseconds(double value, const std::string& unit) {
  double us = NAN;
  if (unit == "ns")
    us = value / 1e3;
  else if (unit == "us")
    us = value;
  else if (unit == "ms")
    us = value * 1e3;
  else if (unit == "s")
    us = value * 1e6;
  else
    fail("unknown time unit '" + printable(unit) + "'");
  // Times are sorted and divided; NaN breaks the sort and a negative time means nothing.
  if (!std::isfinite(us) || us < 0) fail("real_time " + std::to_string(value) + " is not a finite, non-negative time");
  return us;
}

// Google Benchmark writes NaN (and inf) for some aggregates, e.g. the cv of a counter whose mean is
// zero; Python's json reads those, strict JSON parsers do not. Outside strings, turn them into null.
std::string without_non_finite_literals(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* literal : {"-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"}) {
      if (c != literal[0]) continue;  // cheap first: most characters start no literal
      const size_t n = std::char_traits<char>::length(literal);
      if (text.compare(i, n, literal) == 0) {
        out += "null";
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

}  // namespace

std::string ResultFile::said(const std::string& key, const std::string& otherwise) const {
  const auto it = context.find(key);
  return it == context.end() ? otherwise : it->second;
}

bool ResultFile::per_token(const std::string& family) const {
  if (family.empty()) return false;
  const std::string families = said(kPerTokenContext, kDecoderFamily);
  for (size_t start = 0; start < families.size();) {
    const size_t comma = std::min(families.find(',', start), families.size());
    if (families.compare(start, comma - start, family) == 0) return true;
    start = comma + 1;
  }
  return false;
}

std::string ResultFile::device_label(const std::string& device) const {
  const std::string machine = said(device == "cpu" ? "cpu_model" : "device_name");
  return machine.empty() || machine == "none" ? device : device + " · " + machine;
}

bool ResultFile::interleaved() const {
  const std::string order = said("condbench_interleaving");
  return order == "random" || order == "rounds";
}

std::string ResultFile::lockstep() const { return said(kLockstepContext); }

double ResultFile::lockstep_allowance() const {
  const auto it = context.find(kLockstepAllowanceContext);
  if (it == context.end()) return 1;
  char* end = nullptr;
  const double x = std::strtod(it->second.c_str(), &end);
  const bool whole = !it->second.empty() && end == it->second.c_str() + it->second.size();
  return whole && x >= 1 && x <= kMaxLockstepAllowance ? x : kDriftBetweenProcesses;
}

ResultFile load_result_file(const std::string& path) {
  // Opening a FIFO waits for a writer, which may never come; a device or a folder reads as nothing
  // useful: only regular files (a link to one is one) are result files.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!ec && status.type() != std::filesystem::file_type::regular)
    fail(path + ": not a regular file (a FIFO, a device or a folder): give a result file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path + ": cannot open");
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path + ": cannot read it");
  if (static_cast<uint64_t>(size) > kMaxResultFileBytes)
    fail(path + ": " + std::to_string(size) + " bytes, more than " + std::to_string(kMaxResultFileBytes) +
         " (limit: result file size)");
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  if (in.gcount() != size) fail(path + ": cannot read it");
  return parse_result_file(path, text);
}

ResultFile parse_result_file(const std::string& path, const std::string& text) {
  nlohmann::json data;
  try {
    // Google Benchmark output nests three deep; a limit keeps a crafted file from overflowing the
    // stack of the recursive code that later walks (or prints) the values.
    auto depth_limit = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth) fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " (limit: JSON nesting)");
      return true;
    };
    data = nlohmann::json::parse(without_non_finite_literals(text), depth_limit);
  } catch (const Error& e) {
    fail(path + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": not JSON (" + printable(e.what(), 120) + ")");
  }
  if (!data.is_object() || !data.contains("context") || !data["context"].is_object() || !data.contains("benchmarks") ||
      !data["benchmarks"].is_array())
    fail(path + ": not Google Benchmark output (no context and benchmarks)");
  ResultFile file;
  file.path = path;
  for (const auto& [key, value] : data["context"].items())
    file.context[key] = value.is_string() ? value.get<std::string>() : value.dump();
  if (!file.context.count("condbench_schema"))
    fail(path + ": not a condbench result (its context has no condbench_schema)");
  const std::string& schema = file.context["condbench_schema"];
  if (schema != kResultSchema && schema != kOldestResultSchema)
    fail(path + ": unknown condbench schema '" + printable(schema) + "' (this report reads schemas " +
         kOldestResultSchema + " to " + kResultSchema + ")");

  std::map<std::string, size_t> index;  // series name -> position
  // (name, repetition_index) of every repetition read: a file concatenated with itself would pool its
  // repetitions twice and narrow every interval, so a repetition given twice is refused.
  std::set<std::pair<std::string, int64_t>> repetitions;
  size_t entry = 0;
  try {
    for (const auto& b : data["benchmarks"]) {
      ++entry;
      if (!b.is_object()) fail("benchmark entry " + std::to_string(entry) + " is not an object");
      std::optional<BenchmarkId> id = BenchmarkId::read(b.value("run_name", b.value("name", std::string())));
      if (!id) continue;
      auto [it, added] = index.emplace(id->name, file.series.size());
      if (added) file.series.push_back(Series{std::move(*id), {}, {}, {}, {}});
      Series& s = file.series[it->second];
      if (b.value("error_occurred", false)) {
        s.error = b.value("error_message", std::string("error"));
        continue;
      }
      const std::string run_type = b.value("run_type", std::string("iteration"));
      const bool is_median = run_type == "aggregate" && b.value("aggregate_name", std::string()) == "median";
      if (run_type == "iteration" && b.contains("repetition_index") && b["repetition_index"].is_number_integer() &&
          !repetitions.emplace(s.name, b["repetition_index"].get<int64_t>()).second)
        fail("benchmark entry " + std::to_string(entry) + " repeats repetition " +
             std::to_string(b["repetition_index"].get<int64_t>()) + " of " + printable(s.name, 120) +
             " (a file joined with itself, or with another run's?)");
      if (run_type == "iteration" || (is_median && s.times_us.empty())) {
        if (is_median) s.counters.clear();
        s.times_us.push_back(to_microseconds(b.at("real_time").get<double>(), b.value("time_unit", std::string("ns"))));
        if (is_median) s.gpu_us.clear();
        if (const auto gpu = b.find("gpu_us"); gpu != b.end() && gpu->is_number()) {
          const double us = gpu->get<double>();
          if (!std::isfinite(us) || us < 0)
            fail("gpu_us " + std::to_string(us) + " is not a finite, non-negative time");
          s.gpu_us.push_back(us);
        }
        if (s.counters.empty())
          for (const auto& [key, value] : b.items())
            if (value.is_number() && key != "real_time" && key != "cpu_time" && key != "iterations" &&
                key != "repetitions" && key != "repetition_index" && key != "threads" && key != "family_index" &&
                key != "per_family_instance_index" && key != "sequence" && key != "round")
              s.counters[key] = value.get<double>();
      }
    }
  } catch (const Error& e) {
    fail(path + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's own words ("[json.exception.type_error.302] type must be number, but is string")
    // without its prefix, and which entry it was.
    std::string why = e.what();
    if (why.rfind("[json.exception.", 0) == 0 && why.find("] ") != std::string::npos)
      why = why.substr(why.find("] ") + 2);
    fail(path + ": benchmark entry " + std::to_string(entry) + " is malformed (" + printable(why, 120) + ")");
  }
  if (file.series.empty()) fail(path + ": no condbench benchmarks (early_exit/... or primitive/...)");
  // Files before gpu_span_us called a host-waiting strategy's span on the GPU's timeline gpu_us too,
  // measured once per case: read as what it is, one figure of gpu_span_us.
  for (Series& s : file.series)
    if (const auto syncs = s.counters.find("host_syncs"); syncs != s.counters.end() && syncs->second > 0 &&
                                                          s.counters.count("gpu_us") &&
                                                          !s.counters.count("gpu_span_us")) {
      s.counters["gpu_span_us"] = s.counters["gpu_us"];
      s.counters.erase("gpu_us");
      s.gpu_us.clear();
    }
  return file;
}

}  // namespace condbench::report
