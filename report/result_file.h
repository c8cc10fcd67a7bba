#pragma once
// A condbench result file (Google Benchmark JSON), read and checked: the run's context and one
// Series per benchmark with the real time of each repetition.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "condbench/result_format.h"

namespace condbench::report {

// One benchmark of a file: what its name says (BenchmarkId: device, strategy, scenario, batch and
// the model's axes) and what was measured.
struct Series : BenchmarkId {
  std::vector<double> times_us;            // wall time of each repetition
  std::map<std::string, double> counters;  // per inference, from the first repetition
  std::vector<double> gpu_us;              // each repetition's gpu_us, where it has one
  std::string error;                       // a skipped or failed benchmark: why (no times then)
};

struct ResultFile {
  std::string path;
  std::map<std::string, std::string> context;
  std::vector<Series> series;

  // What its context says of `key`, or `otherwise` where it says nothing.
  std::string said(const std::string& key, const std::string& otherwise = "") const;
  // Whether its benchmarks of `family` (model_family of a series' axes) are timed per generated
  // token: one kPerTokenContext names (a file without it: the decoder).
  bool per_token(const std::string& family) const;
  // "cpu · AMD EPYC" or "cuda · NVIDIA H200": the machine a series ran on.
  std::string device_label(const std::string& device) const;
  // Whether its repetitions were interleaved with every other cell's (condbench's random order or
  // rounds, the peer's rounds), and the lockstep it was timed in ("" for none).
  bool interleaved() const;
  std::string lockstep() const;
  // The allowance its lockstep gave a pair across its files: 1 where the file does not say (the first
  // lockstep runs gave none); kDriftBetweenProcesses where what it says is not a number from 1 to
  // kMaxLockstepAllowance (a file edited by hand is judged as timed apart).
  double lockstep_allowance() const;
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
