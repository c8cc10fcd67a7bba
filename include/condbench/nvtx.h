#pragma once
// NVTX ranges in the `condbench` domain (docs/design.md §4), so Nsight Systems shows a range per benchmark
// run, per inference and per block / exit test of host-driven strategies. The level is chosen at
// run time (--nvtx=off|run|iter|stage); without the NVTX3 headers everything compiles to nothing.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace condbench::nvtx {

enum class Level { off = 0, run = 1, iter = 2, stage = 3 };

void set_level(Level level);
Level level();
Level parse_level(const std::string& text);  // throws condbench::Error
const char* level_name(Level level);

// A message registered once with the domain; pushing it costs no string handling.
class RegisteredString {
 public:
  explicit RegisteredString(const char* text);
  const void* handle() const { return handle_; }

 private:
  const void* handle_ = nullptr;
};

// The registered string of a whole inference ("inference"); StageRanges holds its stages'.
const RegisteredString& inference_string();

// The stage strings a host-driven strategy needs, resolved once in prepare() so that the timed
// path only reads a pointer.
class StageRanges {
 public:
  StageRanges() = default;
  explicit StageRanges(int blocks);
  const RegisteredString& block(int i) const { return *blocks_[i]; }
  const RegisteredString& exit_test(int exit) const { return *exit_tests_[exit - 1]; }

 private:
  std::vector<const RegisteredString*> blocks_, exit_tests_;
};

// Attaches an NVTX tool for the rest of the process: sets NVTX_INJECTION64_PATH to `library` (an
// injection library such as condbench-trace.so) and `environment` (its settings), then initialises
// NVTX at once, so the tool is loaded before any range and sees the run even at --nvtx=off.
// Must come before the first NVTX call. Throws condbench::Error when this build has no NVTX or
// another tool is already attached.
void attach_tool(const std::string& library, const std::vector<std::pair<std::string, std::string>>& environment);

// Whether the tool attach_tool loaded takes spans the host timed itself (condbench-trace.so does:
// condbench_trace_span), and gives it one: a range on the track named `track` (the GPU's), start
// and end in nanoseconds of std::chrono::steady_clock. Nothing without such a tool.
bool records_spans();
void record_span(const char* track, const char* name, int64_t start_ns, int64_t end_ns);
// The track condbench draws an inference's GPU time on (between two CUDA events); readers of a
// --trace file (scripts/device-check's summary) receive it as data (rules.json's trace.gpu_track).
inline constexpr const char* kGpuTrack = "GPU (CUDA events)";

void push(const RegisteredString& message);
void push(const std::string& message);  // unregistered: for once-per-run ranges
void pop();

// Opens a range when the run's NVTX level is at least `at`; closes it when leaving scope.
class ScopedRange {
 public:
  ScopedRange(Level at, const RegisteredString& message) : open_(enabled(at)) {
    if (open_) push(message);
  }
  ScopedRange(Level at, const std::string& message) : open_(enabled(at)) {
    if (open_) push(message);
  }
  ~ScopedRange() {
    if (open_) pop();
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  static bool enabled(Level at);
  bool open_;
};

}  // namespace condbench::nvtx
