#pragma once
// Counts the ATen operators this thread dispatches while it lives, top-level calls only (an
// at::linear that calls addmm is one): a RecordFunction callback, added on construction and
// removed on destruction, so nothing observes an inference or a decode step outside the untimed
// passes that make one. What the torch and aoti engines' `launches` counter is.
#include <ATen/record_function.h>

#include <cstdint>

namespace condbench {

class AtenCallCount {
 public:
  AtenCallCount();
  ~AtenCallCount();
  AtenCallCount(const AtenCallCount&) = delete;
  AtenCallCount& operator=(const AtenCallCount&) = delete;

  int64_t calls() const;

 private:
  at::RecordFunctionGuard enabled_{true};
  at::CallbackHandle handle_;
};

// Runs `work`, and returns the top-level ATen operators it dispatched when `count` is set (else 0,
// with no callback installed: a run whose launches are not ATen calls).
template <typename Work>
int64_t aten_calls_of(bool count, Work&& work) {
  if (!count) {
    work();
    return 0;
  }
  const AtenCallCount counter;
  work();
  return counter.calls();
}

}  // namespace condbench
