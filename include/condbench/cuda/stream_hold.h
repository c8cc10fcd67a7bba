#pragma once
// Holds a stream with a spinning kernel while work is enqueued behind it, then lets it go, so that
// CUDA events recorded around that work time the GPU alone (as nvbench's blocking kernel does).
// Without it, a start event on an idle stream completes at once and the host's enqueueing of
// what follows — launch overhead, framework dispatch — lands between the events.
//
// The kernel waits on a flag in mapped pinned memory that release() sets. It gives up by itself
// after a timeout, so a host that blocks while the stream is held (an enqueued host sync, or a
// launch queue filled to the brim) costs the timeout, never a hang, and timed_out() says the
// measurement is not to be used.
#include <cuda_runtime_api.h>

#include "condbench/cuda/resources.h"

namespace condbench::cuda {

class StreamHold {
 public:
  explicit StreamHold(double timeout_seconds = 2.0);
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;

  // Enqueues the spinning kernel on `stream`: work enqueued after it waits. The timeout is the
  // constructor's, or `timeout_seconds` for this hold (sized to what is queued behind it).
  void hold(cudaStream_t stream);
  void hold(cudaStream_t stream, double timeout_seconds);
  // Lets the kernel finish.
  void release() noexcept;
  // Whether the kernel gave up before release(); valid once the stream has passed it (after a
  // synchronisation on an event recorded behind the held work).
  bool timed_out() const { return flags_[1] != 0; }

 private:
  volatile int* flags_ = nullptr;  // [0]: release, [1]: timed out; mapped pinned memory
  unsigned long long timeout_ns_;
};

}  // namespace condbench::cuda
