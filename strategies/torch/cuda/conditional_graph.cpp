// ConditionalGraph by either route (conditional_graph.h says which and why): the one source
// that differs by CONDBENCH_TORCH_NATIVE_CONDITIONAL. CMakeLists.txt compiles the route the build
// did not take too, so both compile on every change.
#include "torch/cuda/conditional_graph.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "condbench/cuda/check.h"
#include "condbench/cuda/resources.h"
#include "condbench/paired_scope.h"
#include "torch/cuda/conditional_graph_kernels.h"
#include "torch/cuda/torch_graph_support.h"

namespace condbench {
namespace {
// Both routes refuse what only one would notice: the runtime route has a stream per level.
void check_depth(int level, int levels) {
  if (level < 1 || level > levels)
    throw std::logic_error("ConditionalGraph: a conditional body " + std::to_string(level) +
                           " deep in a graph made for " + std::to_string(levels));
}
}  // namespace

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL

struct ConditionalGraph::Route {
  int levels = 0;
  at::cuda::CUDAGraph graph;
};

namespace {
class NativeBody final : public ConditionalGraph::Body {
 public:
  NativeBody(at::cuda::CUDAGraph& graph, const at::Tensor& predicate, TorchConditionalBody::Kind kind)
      : body_(graph, predicate, kind) {}
  void end() override { body_.end(); }

 private:
  TorchConditionalBody body_;
};
}  // namespace

ConditionalGraph::ConditionalGraph(int levels) : route_(std::make_unique<Route>()) { route_->levels = levels; }
ConditionalGraph::~ConditionalGraph() = default;

std::vector<at::cuda::CUDAStream> ConditionalGraph::streams(const at::cuda::CUDAStream& side) const {
  return {side};  // the bodies' streams are LibTorch's own
}

void ConditionalGraph::capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) {
  const c10::cuda::CUDAStreamGuard on_side(side);
  TorchGraphCapture capture(route_->graph, at::cuda::graph_pool_handle());
  body();
  capture.end();
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_if(const at::Tensor& predicate, int level) {
  check_depth(level, route_->levels);
  return std::make_unique<NativeBody>(route_->graph, predicate, TorchConditionalBody::Kind::if_node);
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_while(const at::Tensor& predicate, int level) {
  check_depth(level, route_->levels);
  return std::make_unique<NativeBody>(route_->graph, predicate, TorchConditionalBody::Kind::while_node);
}

void ConditionalGraph::launch() { route_->graph.replay(); }

#else

struct ConditionalGraph::Route {
  // One stream of its own per nesting level (LibTorch's stream pool would repeat after 32).
  std::vector<cuda::Stream> owned;
  std::vector<at::cuda::CUDAStream> levels;  // the same streams, as LibTorch sees them
  GraphMemoryPool pool;                      // declared before the graph: released after it is destroyed
  cuda::Graph graph;
  cuda::GraphExec exec;
};

namespace {
// A body captured on its level's stream: the capture scope, and that stream made current for
// LibTorch; closed (or, on unwinding, abandoned) in reverse order. A WHILE body ends by setting its
// node's handle again from the predicate (`again`, null for an IF).
class RuntimeBody final : public ConditionalGraph::Body {
 public:
  RuntimeBody(const at::cuda::CUDAStream& stream, cudaGraph_t graph, cudaGraphConditionalHandle handle,
              const bool* again)
      : capture_(stream.stream(), graph), current_(stream), stream_(stream.stream()), handle_(handle), again_(again) {}
  void end() override {
    if (again_ != nullptr) cuda::launch_set_condition_from(handle_, again_, stream_);
    capture_.end();
  }

 private:
  cuda::CaptureScope capture_;
  c10::cuda::CUDAStreamGuard current_;
  cudaStream_t stream_;
  cudaGraphConditionalHandle handle_;
  const bool* again_;
};

// A conditional node of `type` at the capture's current point on `parent`, its handle set from
// the predicate just before it; the body to capture on `body_stream`.
std::unique_ptr<ConditionalGraph::Body> open_node(const at::Tensor& predicate, cudaGraphConditionalNodeType type,
                                                  const at::cuda::CUDAStream& body_stream) {
  const cudaStream_t parent = at::cuda::getCurrentCUDAStream().stream();
  const cudaGraphConditionalHandle handle = cuda::make_condition(parent);
  const bool* flag = predicate.data_ptr<bool>();
  cuda::launch_set_condition_from(handle, flag, parent);
  const cudaGraph_t body = cuda::add_conditional(parent, handle, type);
  return std::make_unique<RuntimeBody>(body_stream, body, handle, type == cudaGraphCondTypeWhile ? flag : nullptr);
}
}  // namespace

ConditionalGraph::ConditionalGraph(int levels) : route_(std::make_unique<Route>()) {
  for (int level = 0; level < levels; ++level) {
    route_->owned.push_back(cuda::make_stream());
    route_->levels.push_back(at::cuda::getStreamFromExternal(route_->owned.back().get(), c10::cuda::current_device()));
  }
}
ConditionalGraph::~ConditionalGraph() = default;

std::vector<at::cuda::CUDAStream> ConditionalGraph::streams(const at::cuda::CUDAStream& side) const {
  std::vector<at::cuda::CUDAStream> all{side};
  all.insert(all.end(), route_->levels.begin(), route_->levels.end());
  return all;
}

void ConditionalGraph::capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) {
  const c10::cuda::CUDAStreamGuard on_side(side);
  std::vector<cudaStream_t> ours;
  for (const at::cuda::CUDAStream& stream : streams(side)) ours.push_back(stream.stream());
  const std::unique_ptr<PairedScope> routing = route_->pool.route([ours](cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return std::find(ours.begin(), ours.end(), stream) != ours.end() &&
           cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
  });
  cuda::CaptureScope capture(side.stream());
  body();
  route_->graph = cuda::Graph(capture.end());
  routing->close();
  route_->exec = cuda::instantiate(route_->graph);
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_if(const at::Tensor& predicate, int level) {
  check_depth(level, static_cast<int>(route_->levels.size()));
  return open_node(predicate, cudaGraphCondTypeIf, route_->levels[level - 1]);
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_while(const at::Tensor& predicate, int level) {
  check_depth(level, static_cast<int>(route_->levels.size()));
  return open_node(predicate, cudaGraphCondTypeWhile, route_->levels[level - 1]);
}

void ConditionalGraph::launch() {
  CONDBENCH_CUDA_CHECK(cudaGraphLaunch(route_->exec.get(), at::cuda::getCurrentCUDAStream().stream()));
}

#endif

}  // namespace condbench
