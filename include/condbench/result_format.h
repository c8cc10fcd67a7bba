#pragma once
// What a result file promises its readers (docs/design.md §4): the schema version, and the
// benchmark name, built and read by one type so the runner, condbench-report and the peer agree.
//
//   early_exit/cpu/native/fused/exit:2/batch:64/hidden:1024/blocks:3
//   `-------- labels --------' `------------- axes (key:value) -------------'
//
// Labels are plain parts (family, device, engine, strategy); axes are key:value parts in order.
// The scenario is the axis keyed exit or mix. A reader keeps axes it does not know: a name with an
// extra axis is a different benchmark, never one to drop or to merge with another.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace condbench {

// Bumped when the meaning of names, counters or context keys changes; condbench-report checks it.
// The Python peer writes the same value (bench/python/peer.py, checked by tests/test_python_peer.py).
constexpr const char* kResultSchema = "1";

class BenchmarkName {
 public:
  struct Part {
    std::string key;  // empty for a label
    std::string value;
  };

  BenchmarkName& label(std::string value);
  BenchmarkName& axis(std::string key, std::string value);

  // nullopt for a name that is not labels and key:value axes: an empty part, an empty key or
  // value, more than one ':' in a part.
  static std::optional<BenchmarkName> parse(std::string_view name);

  std::string str() const;  // parse(n.str()) == n, and parse(s)->str() == s
  const std::vector<Part>& parts() const { return parts_; }
  std::vector<std::string> labels() const;
  // The value of an axis, or nullopt.
  std::optional<std::string> axis_value(std::string_view key) const;
  // "exit:2" or "mix:early": the first axis keyed exit or mix; nullopt when there is none.
  std::optional<std::string> scenario() const;
  // The labels alone, joined: "early_exit/cpu/native/fused", what every configuration shares.
  std::string without_axes() const;

  bool operator==(const BenchmarkName& other) const { return str() == other.str(); }

 private:
  std::vector<Part> parts_;
};

}  // namespace condbench
