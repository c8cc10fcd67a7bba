#pragma once
// Command-line parsing shared by condbench and condbench-infer. Project flags take the form
// --name=value (or --name for switches); a bad value throws condbench::Error with one line that
// names the flag, which main() prints before exiting with code 2.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "condbench/family.h"
#include "condbench/nvtx.h"
#include "condbench/strategy.h"

namespace condbench::cli {

// -h or --help anywhere.
bool asks_for_help(int argc, char** argv);

// Takes the flags named in `known` (with a value: --name=value, or --name value when the next
// argument does not start with '-') and `switches` out of argv, so Google Benchmark never sees
// them, and returns them by name. A known flag without its value, or given twice, is an error.
std::map<std::string, std::string> take_flags(int& argc, char** argv, const std::vector<std::string>& known,
                                              const std::vector<std::string>& switches);

// Comma-separated values: none empty, at most kMaxListItems, and (when `distinct`) none twice.
constexpr size_t kMaxListItems = 256;
std::vector<std::string> split_list(const std::string& flag, const std::string& text, bool distinct = true);
int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi);
std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text, int64_t lo, int64_t hi);
float parse_float(const std::string& flag, const std::string& text, float lo, float hi);
// A seed: --flag's value in [0, 2^63), or `fallback` when `flags` lacks it.
uint64_t parse_seed(const std::map<std::string, std::string>& flags, const std::string& flag, uint64_t fallback);
// --thresholds: `count` values in [0, 1], one per exit before the final one; required.
std::vector<float> parse_thresholds(const std::map<std::string, std::string>& flags, int count);
// --batch, in every tool and for every model: 1..kMaxBatch rows (condbench/config.h; whether a
// model's pool fits in memory is checked per model). A list for condbench, one value for
// condbench-infer.
std::vector<int64_t> parse_batches(const std::string& text);
int64_t parse_batch(const std::string& text);
// The sizes a family's flags select (docs/design.md §4), whatever its unit: one row per combination
// of its axes' values, in axes() order, the first outermost. An axis's values are its flag's list
// (--d-model=N[,N...]); else, for an axis that scales with another, that one's value times its
// scale; else its sweep (runs, or full_runs with --full; else its fallback).
std::vector<std::vector<int>> size_combinations(const Family& family, const std::map<std::string, std::string>& flags,
                                                bool full);
std::vector<Device> parse_devices(const std::string& flag, const std::string& text);
// Every name must be a registered strategy on some device and engine.
std::vector<std::string> parse_strategies(const std::string& flag, const std::string& text);

// The devices a run uses when --device is not given: all where a GPU is present, else cpu.
std::vector<Device> default_devices();
bool cuda_built();      // the CUDA parts of condbench were compiled
bool cuda_available();  // ... and a CUDA device is present
// Why this machine cannot run anything on `device` ("no CUDA device is visible"), or nullopt.
Unsupported device_unavailable(Device device);

}  // namespace condbench::cli
