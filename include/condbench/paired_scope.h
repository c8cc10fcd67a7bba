#pragma once
// A begin/end pair as a scope. CUDA graph capture, a conditional node's body and the caching
// allocator's routing to a graph's pool are all pairs whose second half must run exactly once:
// an exception between the two halves must not leave a stream capturing (the thread may then not
// cudaMalloc or synchronise the device, so every later CUDA case in the process fails) or the
// allocator routing a stream's allocations into a pool nobody will release.
//
//   PairedScope capture([&] { graph.capture_begin(pool); },   // runs now
//                       [&] { graph.capture_end(); },          // close(): the normal way out
//                       [&]() noexcept { abandon(...); });     // unwinding: best-effort cleanup
//   ... capture ...
//   capture.close();
//
// close() runs `end` and lets its errors propagate (after `abandon` tidied up). If the scope is left without close()
// (an exception is unwinding), the destructor runs `abandon` instead, which must not throw: the exception already in
// flight is the one worth reporting. Nested scopes unwind innermost first.
#include <functional>
#include <utility>

namespace condbench {

class PairedScope {
 public:
  using Action = std::function<void()>;

  PairedScope(const Action& begin, Action end, Action abandon) : end_(std::move(end)), abandon_(std::move(abandon)) {
    begin();  // if begin throws there is nothing to end: the destructor never runs
  }
  ~PairedScope() {
    if (open_) abandon_();
  }
  PairedScope(const PairedScope&) = delete;
  PairedScope& operator=(const PairedScope&) = delete;

  // Ends the pair the normal way. If `end` itself fails halfway (cudaStreamEndCapture reports an
  // invalidated capture before the allocator's routing is ended, say), `abandon` cleans up what is
  // left and the error propagates; `abandon` must therefore be safe after a partial `end`.
  void close() {
    if (!open_) return;
    open_ = false;
    try {
      end_();
    } catch (...) {
      abandon_();
      throw;
    }
  }
  bool open() const { return open_; }

 private:
  Action end_, abandon_;
  bool open_ = true;
};

}  // namespace condbench
