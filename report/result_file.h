#pragma once
// A condbench result file (Google Benchmark JSON), read and checked: the run's context and one
// Series per benchmark with the real time of each repetition.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace condbench::report {

struct Series {
  std::string name;  // run_name without Google Benchmark's "/real_time"
  bool primitive = false;
  // early_exit/<device>/<engine>/<strategy>/<scenario>/batch:<b>/hidden:<h>/blocks:<n>, or for
  // another family .../batch:<b>/model:<family>/d_model:<d>/<its sizes>/blocks:<n>
  std::string device, engine, strategy, scenario;
  int64_t batch = 0, hidden = 0, blocks = 0;  // hidden: the width the heads read (a transformer's d_model)
  // The other axes of the name, in order ("model:transformer/heads:4/ffn:1024/seq:32", or ones
  // the report does not know, "seq:128"): kept, grouped on and shown.
  std::string extra_axes;
  std::string primitive_name;              // primitive/<device>/<name>
  std::vector<double> times_us;            // wall time of each repetition
  std::map<std::string, double> counters;  // per inference, from the first repetition
  std::string error;                       // a skipped or failed benchmark: why (no times then)

  std::string strategy_key() const { return engine + "/" + strategy; }
};

struct ResultFile {
  std::string path;
  std::map<std::string, std::string> context;
  std::vector<Series> series;

  // "cpu · AMD EPYC" or "cuda · NVIDIA H200": the machine a series ran on.
  std::string device_label(const std::string& device) const;
};

// Result files come from other machines: the reader refuses one larger than this...
constexpr uint64_t kMaxResultFileBytes = 256ull << 20;
// ...or nested deeper than this (Google Benchmark's output nests three deep).
constexpr int kMaxJsonDepth = 32;

// Throws condbench::Error "<path>: <what is wrong>" for a file that is unreadable, not JSON, not
// Google Benchmark output, of an unknown condbench schema, or without condbench benchmarks.
ResultFile load_result_file(const std::string& path);
// The same for a file's text already in memory (`path` names it in errors); the fuzzing harness
// comes here too.
ResultFile parse_result_file(const std::string& path, const std::string& text);

}  // namespace condbench::report
