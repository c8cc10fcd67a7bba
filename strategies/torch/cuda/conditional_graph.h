#pragma once
// A CUDA graph of LibTorch ops with conditional IF and WHILE nodes whose predicates are device
// tensors: what the graph_cond strategies (strategies/torch/cuda/graph_cond.cpp) and the decoder's
// graph_cond and graph_while (strategies/decoder/torch/cuda/device_decided_strategy.h) capture,
// and what torch.cond and while_loop under CUDA-graph capture do in PyTorch 2.12+. One class, two
// routes, chosen at configure time by a compile check (CMakeLists.txt; the
// CONDBENCH_TORCH_CONDITIONAL_ROUTE option forces one), not by a version string:
//  - native_api: at::cuda::CUDAGraph::begin_capture_to_if_node / begin_capture_to_while_node /
//    end_capture_to_conditional_node (LibTorch sets the handle from a 0-dim predicate tensor, a
//    WHILE body's end sets it again through set_conditional_handle_for_current_node, and
//    LibTorch hands the allocator's routing from the parent capture to the body and back);
//  - runtime_api, for LibTorch without them (2.11 and older): the graph is condbench's own. The
//    capture is a cuda::CaptureScope on a side stream, each conditional node is added to the
//    capturing graph (cudaGraphAddNode + cudaStreamUpdateCaptureDependencies), a kernel of ours
//    sets its handle from the predicate (before the node, and at the end of a WHILE body), and
//    the body is captured on a stream of its own with cudaStreamBeginCaptureToGraph. LibTorch's
//    caching allocator routes every allocation made on those streams while they capture into one
//    private pool (GraphMemoryPool), which outlives the graph; the graph is instantiated and
//    launched with the runtime API. CUDAGraph is not used there at all: its pool() answers only
//    after a capture has ended, and beginAllocateToPool on the pool an open CUDAGraph capture
//    records to throws.
// Only conditional_graph.cpp differs by route; this header is the same for both.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <functional>
#include <memory>
#include <vector>

namespace condbench {

class ConditionalGraph {
 public:
  // A conditional node's body being captured: captured work goes into it until end() (or, on
  // unwinding, the destructor abandons it so no stream is left capturing).
  class Body {
   public:
    virtual ~Body() = default;
    virtual void end() = 0;
  };

  // Bodies nest at most `levels` deep (the runtime route captures each level on a stream of
  // its own: a body is captured while its parent's capture is open).
  explicit ConditionalGraph(int levels);
  ~ConditionalGraph();
  ConditionalGraph(const ConditionalGraph&) = delete;
  ConditionalGraph& operator=(const ConditionalGraph&) = delete;

  // Every stream work may be captured on, `side` first: warm each path up on each of them before
  // capturing (a path never run eagerly would initialise cuBLAS inside a body, which a capture
  // cannot hold).
  std::vector<at::cuda::CUDAStream> streams(const at::cuda::CUDAStream& side) const;
  // Captures what `body` enqueues, on `side` made current, into the graph, and instantiates it.
  void capture(const at::cuda::CUDAStream& side, const std::function<void()>& body);
  // Within capture(): an IF node at the current point, taken when `predicate` (bool, one element,
  // on the device) is true at replay. Its body is `level` deep (1 = directly in the graph).
  std::unique_ptr<Body> open_if(const at::Tensor& predicate, int level);
  // Within capture(): a WHILE node at the current point, its body run for as long as `predicate`
  // is true, read before the first pass and again at the end of each (the body updates it in
  // place). The graph keeps reading that memory at every replay: the predicate must be a tensor
  // that outlives the graph (a member of the strategy's state), never a temporary, whose block
  // the allocator would hand to something else.
  std::unique_ptr<Body> open_while(const at::Tensor& predicate, int level);
  // Replays the graph on the current stream.
  void launch();

 private:
  struct Route;
  std::unique_ptr<Route> route_;
};

}  // namespace condbench
