#include "condbench/cuda/resources.h"

#include "condbench/error.h"

namespace condbench::cuda {

Stream make_stream() {
  cudaStream_t stream = nullptr;
  CONDBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream);
}

Event make_event(bool timing) {
  cudaEvent_t event = nullptr;
  CONDBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(event);
}

GraphExec instantiate(const Graph& graph) {
  cudaGraphExec_t exec = nullptr;
  CONDBENCH_CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
  return GraphExec(exec);
}

CaptureScope::CaptureScope(cudaStream_t stream, cudaGraph_t into) : stream_(stream), owns_graph_(into == nullptr) {
  // Thread-local mode: only this thread's unsafe calls (e.g. a synchronous cudaMalloc) are
  // forbidden during capture, not those of unrelated threads.
  if (into)
    CONDBENCH_CUDA_CHECK(
        cudaStreamBeginCaptureToGraph(stream, into, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal));
  else
    CONDBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

CaptureScope::~CaptureScope() {
  if (!capturing_) return;
  cudaGraph_t partial = nullptr;
  CONDBENCH_CUDA_WARN(cudaStreamEndCapture(stream_, &partial));
  // A body captured into a node's graph belongs to the node; only a new graph is ours to destroy.
  if (owns_graph_ && partial) CONDBENCH_CUDA_WARN(cudaGraphDestroy(partial));
}

cudaGraph_t CaptureScope::end() {
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  CONDBENCH_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  return graph;
}

namespace {
struct CaptureInfo {
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* dependencies = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // with the dependencies: a query without them is lossy
  size_t count = 0;                          // when an edge is not a default one
};

CaptureInfo capture_info(cudaStream_t stream) {
  CaptureInfo info;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CONDBENCH_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, &info.graph, &info.dependencies, &info.edges, &info.count));
  if (status != cudaStreamCaptureStatusActive) fail("CUDA graph building: the stream is not capturing");
  return info;
}
}  // namespace

cudaGraphNode_t last_captured_node(cudaStream_t stream) {
  const CaptureInfo info = capture_info(stream);
  if (info.count != 1) fail("CUDA graph building: expected one node at the capture point");
  return info.dependencies[0];
}

cudaGraphConditionalHandle make_condition(cudaStream_t capturing) {
  const CaptureInfo info = capture_info(capturing);
  cudaGraphConditionalHandle handle{};
  // defaultLaunchValue 0 and flags 0 (no cudaGraphCondAssignDefault): the value is whatever the
  // exit-test kernel sets, and it sets it on every launch.
  CONDBENCH_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, info.graph, 0, 0));
  return handle;
}

cudaGraph_t add_conditional(cudaStream_t capturing, cudaGraphConditionalHandle handle,
                            cudaGraphConditionalNodeType type) {
  return add_conditional(capturing, handle, type, 1).front();
}

std::vector<cudaGraph_t> add_conditional(cudaStream_t capturing, cudaGraphConditionalHandle handle,
                                         cudaGraphConditionalNodeType type, unsigned bodies) {
  const CaptureInfo info = capture_info(capturing);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = bodies;
  cudaGraphNode_t node = nullptr;
  CONDBENCH_CUDA_CHECK(cudaGraphAddNode(&node, info.graph, info.dependencies, info.edges, info.count, &params));
  CONDBENCH_CUDA_CHECK(
      cudaStreamUpdateCaptureDependencies(capturing, &node, nullptr, 1, cudaStreamSetCaptureDependencies));
  // phGraph_out is the runtime's array, filled by cudaGraphAddNode: one body graph per entry.
  return {params.conditional.phGraph_out, params.conditional.phGraph_out + bodies};
}

}  // namespace condbench::cuda
