// The floors a strategy is judged against: the run's primitives, and the one-core limits a cell's
// FLOPs and bytes cannot beat.
#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "condbench/result_format.h"

namespace condbench::report {

std::map<std::string, std::map<std::string, double>> primitive_floors(const std::vector<ResultFile>& files) {
  std::map<std::string, std::map<std::string, double>> floors;
  for (const ResultFile& file : files)
    for (const Series& s : file.series)
      if (s.primitive && !s.times_us.empty())
        floors[file.device_label(s.device)].emplace(s.primitive_name, median(s.times_us));
  return floors;
}

std::optional<double> host_floor_us(const std::map<std::string, double>& primitives, const Cell& cell,
                                    const std::string& engine) {
  const auto launches = cell.counters.find("launches"), syncs = cell.counters.find("host_syncs");
  const auto launch = primitives.find(engine == "native" ? "launch" : "torch_op");
  const auto read = primitives.find("read4_pinned_sync");
  if (engine == "python" || launches == cell.counters.end() || launch == primitives.end()) return std::nullopt;
  const double waits = syncs == cell.counters.end() ? 0.0 : syncs->second;
  if (waits > 0 && read == primitives.end()) return std::nullopt;
  return launches->second * launch->second + (waits > 0 ? waits * read->second : 0.0);
}

std::optional<double> CpuLimits::read_rate(double bytes) const {
  if (read.empty()) return std::nullopt;
  const Read* largest_no_larger = &read.front();  // `read` is sorted by size
  for (const Read& r : read)
    if (r.bytes <= bytes) largest_no_larger = &r;
  return largest_no_larger->bytes_per_us;
}

std::map<std::string, CpuLimits> cpu_limits(const std::vector<ResultFile>& files) {
  std::map<std::string, CpuLimits> limits;
  for (const ResultFile& file : files)
    for (const Series& s : file.series) {
      if (!s.primitive || s.device != "cpu" || s.times_us.empty()) continue;
      const double us = median(s.times_us);
      if (!(us > 0)) continue;
      const auto counter = [&](const char* key) {
        const auto it = s.counters.find(key);
        return it != s.counters.end() && it->second > 0 ? std::optional<double>(it->second) : std::nullopt;
      };
      CpuLimits& l = limits[file.device_label(s.device)];
      if (s.primitive_name.rfind("read_bandwidth_", 0) == 0 && counter("bytes")) {
        // One rate per buffer size: two files of one machine keep the faster (a floor stays a floor,
        // and the order the files came in changes nothing).
        const double bytes = *counter("bytes"), rate = bytes / us;
        const auto same = std::find_if(l.read.begin(), l.read.end(), [&](const auto& r) { return r.bytes == bytes; });
        if (same != l.read.end()) {
          same->bytes_per_us = std::max(same->bytes_per_us, rate);
          continue;
        }
        l.read.push_back({s.primitive_name, bytes, rate});
        std::sort(l.read.begin(), l.read.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
      } else if (s.primitive_name == "fma_peak" && counter("flops")) {
        l.flops_per_us = *counter("flops") / us;
      } else if (s.primitive_name == "torch_op") {
        l.torch_op_us = us;
      }
    }
  return limits;
}

const char* Floor::bound() const {
  if (calls_us > std::max(memory_us, compute_us)) return "calls";
  return memory_us >= compute_us ? "memory" : "compute";
}

std::optional<Floor> floor_of(const CpuLimits& limits, const Cell& cell, const std::string& engine) {
  const auto bytes = cell.counters.find("bytes_read"), flops = cell.counters.find("flops_executed");
  if (bytes == cell.counters.end() || flops == cell.counters.end() || !limits.flops_per_us) return std::nullopt;
  const std::optional<double> rate = limits.read_rate(bytes->second);
  if (!rate) return std::nullopt;
  Floor f;
  f.memory_us = bytes->second / *rate;
  f.compute_us = flops->second / *limits.flops_per_us;
  if (engine == "torch" || engine == "aoti") {  // each launch an ATen call (an aoti package's extern kernels too)
    const auto launches = cell.counters.find("launches");
    if (!limits.torch_op_us || launches == cell.counters.end()) return std::nullopt;
    f.calls_us = launches->second * *limits.torch_op_us;
  }
  f.us = std::max(f.memory_us, f.compute_us) + f.calls_us;
  // Counters from another machine's file can be anything JSON holds: no floor rather than 0 or inf.
  if (!(f.us > 0) || !std::isfinite(f.us)) return std::nullopt;
  return f;
}

}  // namespace condbench::report
