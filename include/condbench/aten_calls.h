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

}  // namespace condbench
