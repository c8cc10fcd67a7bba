#pragma once
// RAII owners for the CUDA objects condbench creates: move-only, freed exactly once.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "condbench/cuda/check.h"

namespace condbench::cuda {

// Owns one handle and destroys it with Destroy. Handle{} means "owns nothing".
template <typename Handle, cudaError_t (*Destroy)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() { reset(); }
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() {
    if (handle_ != Handle{}) CONDBENCH_CUDA_WARN(Destroy(handle_));
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
using Event = Owned<cudaEvent_t, cudaEventDestroy>;
using Graph = Owned<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = Owned<cudaGraphExec_t, cudaGraphExecDestroy>;

// A stream that does not synchronise with the legacy default stream.
Stream make_stream();
// An event for ordering (no timing) or, with timing = true, for cudaEventElapsedTime.
Event make_event(bool timing);
GraphExec instantiate(const Graph& graph);

// count elements of T from Allocate, returned with Release exactly once: device memory
// (cudaMalloc / cudaFree) or page-locked host memory, the target of asynchronous device->host
// copies (cudaMallocHost / cudaFreeHost).
template <typename T, cudaError_t (*Allocate)(void**, size_t), cudaError_t (*Release)(void*)>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t count) : count_(count) {
    if (count > 0) CONDBENCH_CUDA_CHECK(Allocate(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* get() const { return data_; }
  size_t size() const { return count_; }

 private:
  void reset() {
    if (data_) CONDBENCH_CUDA_WARN(Release(data_));
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  size_t count_ = 0;
};

template <typename T>
using DeviceBuffer = Buffer<T, cudaMalloc, cudaFree>;
template <typename T>
using PinnedBuffer = Buffer<T, cudaMallocHost, cudaFreeHost>;

// Stream capture as a scope: begins capturing `stream` (into a new graph, or into an existing
// `into` graph such as a conditional node's body) and ends it on end() or, should an exception
// leave the scope first, in the destructor, so a stream is never left capturing.
class CaptureScope {
 public:
  explicit CaptureScope(cudaStream_t stream, cudaGraph_t into = nullptr);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

  // Ends the capture; returns the graph (owned by the caller when this scope created it, by the
  // parent node when it captured into `into`).
  cudaGraph_t end();

 private:
  cudaStream_t stream_;
  bool owns_graph_;
  bool capturing_ = true;
};

// The node most recently added to the graph `stream` is capturing: the one a kernel launch just
// made. Used to keep a launch's node for later parameter updates.
cudaGraphNode_t last_captured_node(cudaStream_t stream);

// A handle for a conditional node in the graph `capturing` is capturing into. It is created
// without a default value: a kernel upstream of the node must set it on every launch,
// so the kernel that evaluates the exit test is captured with the handle before the node is added.
cudaGraphConditionalHandle make_condition(cudaStream_t capturing);

// Adds an IF or WHILE node on `handle` at the current point of a capturing stream, makes later
// captured work depend on it, and returns its body graph (owned by the node) to capture into.
cudaGraph_t add_conditional(cudaStream_t capturing, cudaGraphConditionalHandle handle,
                            cudaGraphConditionalNodeType type);
// The same for a node of `bodies` bodies (CUDA 12.8+): an IF-ELSE (cudaGraphCondTypeIf, 2 bodies:
// the first runs when the handle is non-zero, the second when it is zero) or a SWITCH (body i runs
// when the handle is i, none when it is `bodies` or more). Returns the bodies in that order.
std::vector<cudaGraph_t> add_conditional(cudaStream_t capturing, cudaGraphConditionalHandle handle,
                                         cudaGraphConditionalNodeType type, unsigned bodies);

}  // namespace condbench::cuda
