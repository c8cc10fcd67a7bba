#include "torch/cuda/torch_graph_support.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstdio>

#include "condbench/cuda/check.h"
#include "condbench/family.h"
#include "condbench/strategy.h"

namespace condbench {

namespace {

// Ends whatever capture `stream` is in. A capture into a new graph leaves a partial graph that is
// ours to destroy; a body captured into a conditional node's graph belongs to that node.
void end_open_capture(cudaStream_t stream, bool destroy_partial) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream, &partial);  // also ends an invalidated capture
    if (destroy_partial && partial) (void)cudaGraphDestroy(partial);
  }
  (void)cudaGetLastError();  // whatever failed here must not fail the next healthy call
}

// Each allocator ends on its own: either may already have stopped routing to the pool.
void end_routing(c10::DeviceIndex device, at::cuda::MempoolId_t pool) noexcept {
  try {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
  } catch (...) {
    // Not routing any more: CUDAGraph::capture_end or reset() (PyTorch >= 2.12) ended it.
  }
}

// CUDAGraph::capture_begin also routes LibTorch's pinned-host allocator to the pool, with a filter
// that refers to the graph; 2.11's reset() leaves that routing on.
void end_host_routing(at::cuda::MempoolId_t pool) noexcept {
  try {
    at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(pool);
  } catch (...) {
  }
}

}  // namespace

void capture_layers(const ModelConfig& config, const std::function<void()>& capture) {
  try {
    capture();
  } catch (const std::exception& e) {
    if (!config.family->capture_may_refuse()) throw;
    (void)cudaGetLastError();  // a refused capture's error must not fail the next case
    // A sticky error (an illegal address) is no refused capture: the context is lost, and every
    // case after it would fail somewhere else. It stays an error.
    if (cudaDeviceSynchronize() != cudaSuccess) throw;
    throw NotRunnable("its CUDA graph cannot capture the model file's AOTInductor packages: " + one_line(e));
  }
}

TorchGraphCapture::TorchGraphCapture(at::cuda::CUDAGraph& graph, at::cuda::MempoolId_t pool)
    : scope_([&graph, pool] { graph.capture_begin(pool); },  //
             [&graph] { graph.capture_end(); },
             [&graph, pool, stream = at::cuda::getCurrentCUDAStream()]() noexcept {
               end_open_capture(stream.stream(), /*destroy_partial=*/true);
               try {
                 graph.reset();
               } catch (...) {
               }
               end_routing(stream.device_index(), pool);
               end_host_routing(pool);
             }) {}

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
TorchConditionalBody::TorchConditionalBody(at::cuda::CUDAGraph& graph, const at::Tensor& predicate, Kind kind)
    : scope_(
          [&graph, &predicate, kind] {
            if (kind == Kind::while_node)
              graph.begin_capture_to_while_node(predicate);
            else
              graph.begin_capture_to_if_node(predicate);
          },
          [&graph, predicate, kind] {
            if (kind == Kind::while_node) graph.set_conditional_handle_for_current_node(predicate);
            graph.end_capture_to_conditional_node();
          },
          [&graph]() noexcept {
            // begin_capture_to_*_node made the body's stream current.
            const cudaStream_t body = at::cuda::getCurrentCUDAStream().stream();
            try {
              graph.end_capture_to_conditional_node();
            } catch (...) {
              end_open_capture(body, /*destroy_partial=*/false);
            }
          }) {}
#endif

GraphMemoryPool::GraphMemoryPool() : id_(at::cuda::graph_pool_handle()), device_(c10::cuda::current_device()) {}

GraphMemoryPool::~GraphMemoryPool() {
  // Every beginAllocateToPool took a reference on the pool; the graph's blocks are freeable once
  // the last is released.
  for (; routes_ > 0; --routes_) {
    try {
      c10::cuda::CUDACachingAllocator::releasePool(device_, id_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "condbench: warning: releasing a graph's memory pool: %s\n", e.what());
      return;
    }
  }
}

std::unique_ptr<PairedScope> GraphMemoryPool::route(std::function<bool(cudaStream_t)> route_to) {
  const auto begin = [this, &route_to] {
    c10::cuda::CUDACachingAllocator::beginAllocateToPool(device_, id_, std::move(route_to));
    ++routes_;
  };
  const auto end = [this] { c10::cuda::CUDACachingAllocator::endAllocateToPool(device_, id_); };
  const auto abandon = [this]() noexcept { end_routing(device_, id_); };
  return std::make_unique<PairedScope>(begin, end, abandon);
}

}  // namespace condbench
