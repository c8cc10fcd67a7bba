#pragma once
// Pieces the graph-captured torch strategies share: the capture guards (an exception during a
// capture must never leave a stream capturing or the allocator routing into a pool), a private
// memory pool for graphs this project instantiates itself, thresholds in a device tensor that
// captured kernels read, and the in-place merge of one exit's decision into the outputs.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include <functional>
#include <memory>
#include <vector>

#include "condbench/config.h"
#include "condbench/model.h"
#include "condbench/paired_scope.h"

namespace condbench {

// Runs `capture`: a strategy's capture of the model's layers (after their eager warm-up, which
// stays outside: a failure there is no refused capture). A model file's layers are AOTInductor's
// compiled code, which a capture may refuse (a synchronising call, a read on the host): then the
// strategy cannot run that model, and this throws NotRunnable with the reason (the guards below
// have closed the capture). A built-in family's capture failing is condbench's own bug, and a
// sticky CUDA error is no refusal: both stay errors.
void capture_layers(const ModelConfig& config, const std::function<void()>& capture);

// A capture with at::cuda::CUDAGraph, as a scope. CUDAGraph's destructor does not end a capture
// that an exception abandoned, and the thread may then neither cudaMalloc nor synchronise the
// device. On that path this ends the stream's capture (destroying the partial graph), then asks
// the graph to reset and the allocator to stop routing into `pool`: PyTorch >= 2.12 does the
// latter in reset(), older versions leave it to the caller, so each step is tried on its own.
// `pool` is taken before capture (at::cuda::graph_pool_handle()): CUDAGraph::pool() answers only
// after a successful capture.
class TorchGraphCapture {
 public:
  TorchGraphCapture(at::cuda::CUDAGraph& graph, at::cuda::MempoolId_t pool);
  void end() { scope_.close(); }  // capture_end(): the graph is instantiated and ready to replay

 private:
  PairedScope scope_;
};

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
// A conditional node's body captured through LibTorch (native_api route,
// CUDAGraph::begin_capture_to_if_node or begin_capture_to_while_node). A WHILE body's end() first
// sets the loop's handle again from the predicate, which the body has updated. On unwinding the
// body is closed with LibTorch's own end_capture_to_conditional_node, which also hands the
// allocator's routing back to the parent, or, should that fail, by ending the body stream's
// capture directly.
class TorchConditionalBody {
 public:
  enum class Kind { if_node, while_node };
  TorchConditionalBody(at::cuda::CUDAGraph& graph, const at::Tensor& predicate, Kind kind);
  void end() { scope_.close(); }

 private:
  PairedScope scope_;
};
#endif

// A private pool of LibTorch's caching allocator for a graph condbench instantiates itself
// (graph_cond's runtime_api route). Allocations on the streams `route_to` accepts, while a
// Routing is alive, come from this pool, and its blocks stay reserved for the graph until the
// pool is released: declare the pool before the graph it backs, so it is destroyed after it.
class GraphMemoryPool {
 public:
  GraphMemoryPool();
  ~GraphMemoryPool();
  GraphMemoryPool(const GraphMemoryPool&) = delete;
  GraphMemoryPool& operator=(const GraphMemoryPool&) = delete;

  // Routes allocations for as long as the returned scope is open; close() ends it.
  std::unique_ptr<PairedScope> route(std::function<bool(cudaStream_t)> route_to);

 private:
  at::cuda::MempoolId_t id_;
  c10::DeviceIndex device_;
  int routes_ = 0;  // routings begun, each holding a reference on the pool
};

// A stream of LibTorch's pool for a capture and its eager warm-up, returned once everything the
// current stream has enqueued is done (the buffers prepare() just made, zero-filled there): a pool
// stream does not wait for the current one, and a warm-up that read a buffer before its fill could
// index with garbage (a device-side assert, sticky for the process).
inline at::cuda::CUDAStream capture_stream() {
  at::cuda::getCurrentCUDAStream().synchronize();
  return at::cuda::getStreamFromPool();
}

// Thresholds as a device tensor [blocks], copied only when they change.
class DeviceThresholds {
 public:
  void allocate(int blocks) {
    values_ = at::zeros({blocks}, at::TensorOptions().device(at::kCUDA, 0).dtype(at::kFloat));
    uploaded_.clear();
  }
  at::Tensor at(int k) const { return values_[k]; }
  void update(const std::vector<float>& thresholds) {
    if (thresholds == uploaded_) return;  // a benchmark keeps its thresholds: no copy while timed
    values_.copy_(at::tensor(thresholds, at::kFloat), /*non_blocking=*/false);
    uploaded_ = thresholds;
  }

 private:
  at::Tensor values_;
  std::vector<float> uploaded_;
};

// The fixed tensors a captured graph reads and writes: the input the caller's batch is copied
// into, each row's result, and which rows have been decided.
struct CapturedIO {
  at::Tensor input, logits, exit_id, decided;

  void allocate(const ModelConfig& config, int64_t batch) {
    const auto on_gpu = at::TensorOptions().device(at::kCUDA, 0);
    input = at::zeros(config.input_shape(batch), on_gpu.dtype(input_dtype(config)));
    logits = at::zeros({batch, config.num_classes}, on_gpu.dtype(at::kFloat));
    exit_id = at::zeros({batch}, on_gpu.dtype(at::kInt));
    decided = at::zeros({batch}, on_gpu.dtype(at::kBool));
  }
};

// Rows in `fire` (already excluding rows decided earlier) leave at `exit_id` with `logits`.
inline void merge_exit(const at::Tensor& fire, const at::Tensor& logits, int exit_id, at::Tensor& out_logits,
                       at::Tensor& out_ids, at::Tensor& decided) {
  out_logits.copy_(at::where(fire.unsqueeze(1), logits, out_logits));
  out_ids.masked_fill_(fire, exit_id);
  decided.logical_or_(fire);
}

}  // namespace condbench
