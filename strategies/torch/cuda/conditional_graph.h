#pragma once
// A CUDA graph of LibTorch ops with conditional nodes whose predicates are device tensors: IF and
// WHILE (what the graph_cond strategies, strategies/torch/cuda/graph_cond.cpp, capture, and what
// torch.cond and while_loop under CUDA-graph capture do in PyTorch 2.12+), and IF-ELSE and SWITCH
// (CUDA 12.8+: the decoder's graph_cond and graph_while,
// strategies/decoder/torch/cuda/device_decided_strategy.h). One class, two routes. A graph of IF
// and WHILE nodes takes the one chosen at configure time by a compile check (CMakeLists.txt; the
// CONDBENCH_TORCH_CONDITIONAL_ROUTE option forces one), not by a version string; LibTorch's
// capture has no IF-ELSE or SWITCH, so a graph that holds them (Nodes::any) takes the runtime
// route on every LibTorch:
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
// Only conditional_graph.cpp differs by route (the native one is compiled only where LibTorch has
// it); this header is the same for both.
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

  // Which nodes a graph holds: IF and WHILE only, or IF-ELSE and SWITCH too.
  enum class Nodes { if_while, any };

  // Bodies nest at most `levels` deep (the runtime route captures each level on a stream of
  // its own: a body is captured while its parent's capture is open).
  explicit ConditionalGraph(int levels, Nodes nodes = Nodes::if_while);
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
  // Within capture() of a Nodes::any graph: one IF-ELSE node, `then` captured into its first body
  // and `otherwise` into its second; at replay the first runs where `predicate` (bool, one
  // element, on the device) is true, else the second. Both bodies `level` deep.
  void if_else(const at::Tensor& predicate, int level, const std::function<void()>& then,
               const std::function<void()>& otherwise);
  // Within capture() of a Nodes::any graph: one SWITCH node on `index` (int32, one element, on the
  // device), body i captured from cases[i]; at replay body `index` runs, none where the index is
  // outside [0, cases.size()). Every body `level` deep.
  void switch_on(const at::Tensor& index, int level, const std::vector<std::function<void()>>& cases);
  // Replays the graph on the current stream.
  void launch();
  // How the graph is built: "native_api" (LibTorch's conditional capture) or "runtime_api".
  const char* route() const;

  // The routes' interface (conditional_graph.cpp).
  struct Route;

 private:
  std::unique_ptr<Route> route_;
};

}  // namespace condbench
