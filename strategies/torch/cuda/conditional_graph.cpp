// ConditionalGraph by either route (conditional_graph.h says which and why): the one source
// that differs by CONDBENCH_TORCH_NATIVE_CONDITIONAL, which compiles the native route where
// LibTorch has it. The runtime route is compiled everywhere: a graph with IF-ELSE or SWITCH nodes
// takes it on every LibTorch. CMakeLists.txt compiles this file without the native route too, so
// both builds compile on every change.
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

struct ConditionalGraph::Route {
  explicit Route(int levels) : levels(levels) {}
  virtual ~Route() = default;
  Route(const Route&) = delete;
  Route& operator=(const Route&) = delete;

  virtual std::vector<at::cuda::CUDAStream> streams(const at::cuda::CUDAStream& side) const = 0;
  virtual void capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) = 0;
  // An IF or WHILE node's body, opened at the capture's current point.
  virtual std::unique_ptr<Body> open(const at::Tensor& predicate, cudaGraphConditionalNodeType type, int level) = 0;
  // An IF-ELSE (predicate: bool) or SWITCH (predicate: int32) node, each body captured from its callable.
  virtual void branch(const at::Tensor& predicate, cudaGraphConditionalNodeType type, int level,
                      const std::vector<std::function<void()>>& bodies) = 0;
  virtual void launch() = 0;
  virtual const char* name() const = 0;

  // Both routes refuse what only one would notice: the runtime route has a stream per level.
  void check_depth(int level) const {
    if (level < 1 || level > levels)
      throw std::logic_error("ConditionalGraph: a conditional body " + std::to_string(level) +
                             " deep in a graph made for " + std::to_string(levels));
  }

  int levels;
};

namespace {

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL

class NativeBody final : public ConditionalGraph::Body {
 public:
  NativeBody(at::cuda::CUDAGraph& graph, const at::Tensor& predicate, TorchConditionalBody::Kind kind)
      : body_(graph, predicate, kind) {}
  void end() override { body_.end(); }

 private:
  TorchConditionalBody body_;
};

// LibTorch's own conditional capture: IF and WHILE only.
class NativeRoute final : public ConditionalGraph::Route {
 public:
  using Route::Route;

  std::vector<at::cuda::CUDAStream> streams(const at::cuda::CUDAStream& side) const override {
    return {side};  // the bodies' streams are LibTorch's own
  }

  void capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) override {
    const c10::cuda::CUDAStreamGuard on_side(side);
    TorchGraphCapture capture(graph_, at::cuda::graph_pool_handle());
    body();
    capture.end();
  }

  std::unique_ptr<ConditionalGraph::Body> open(const at::Tensor& predicate, cudaGraphConditionalNodeType type,
                                               int level) override {
    check_depth(level);
    return std::make_unique<NativeBody>(
        graph_, predicate,
        type == cudaGraphCondTypeWhile ? TorchConditionalBody::Kind::while_node : TorchConditionalBody::Kind::if_node);
  }

  void branch(const at::Tensor& /*predicate*/, cudaGraphConditionalNodeType /*type*/, int /*level*/,
              const std::vector<std::function<void()>>& /*bodies*/) override {
    throw std::logic_error("ConditionalGraph: IF-ELSE and SWITCH nodes need a graph made with Nodes::any");
  }

  void launch() override { graph_.replay(); }
  const char* name() const override { return "native_api"; }

 private:
  at::cuda::CUDAGraph graph_;
};

#endif

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

// condbench's own graph, built with the CUDA runtime: each node added to the capturing graph, its
// handle set by a kernel of ours from the predicate, each body captured on its level's stream into
// the node's body graph; every allocation LibTorch makes on those streams while they capture goes
// to one private pool that outlives the graph.
class RuntimeRoute final : public ConditionalGraph::Route {
 public:
  explicit RuntimeRoute(int levels) : Route(levels) {
    // One stream of its own per nesting level (LibTorch's stream pool would repeat after 32).
    for (int level = 0; level < levels; ++level) {
      owned_.push_back(cuda::make_stream());
      levels_.push_back(at::cuda::getStreamFromExternal(owned_.back().get(), c10::cuda::current_device()));
    }
  }

  std::vector<at::cuda::CUDAStream> streams(const at::cuda::CUDAStream& side) const override {
    std::vector<at::cuda::CUDAStream> all{side};
    all.insert(all.end(), levels_.begin(), levels_.end());
    return all;
  }

  void capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) override {
    const c10::cuda::CUDAStreamGuard on_side(side);
    std::vector<cudaStream_t> ours;
    for (const at::cuda::CUDAStream& stream : streams(side)) ours.push_back(stream.stream());
    const std::unique_ptr<PairedScope> routing = pool_.route([ours](cudaStream_t stream) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      return std::find(ours.begin(), ours.end(), stream) != ours.end() &&
             cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
    });
    cuda::CaptureScope capture(side.stream());
    body();
    graph_ = cuda::Graph(capture.end());
    routing->close();
    exec_ = cuda::instantiate(graph_);
  }

  // A conditional node of `type` at the capture's current point on the current stream, its handle
  // set from the predicate just before it; the body to capture on the level's stream.
  std::unique_ptr<ConditionalGraph::Body> open(const at::Tensor& predicate, cudaGraphConditionalNodeType type,
                                               int level) override {
    check_depth(level);
    const cudaStream_t parent = at::cuda::getCurrentCUDAStream().stream();
    const cudaGraphConditionalHandle handle = cuda::make_condition(parent);
    const bool* flag = predicate.data_ptr<bool>();
    cuda::launch_set_condition_from(handle, flag, parent);
    const cudaGraph_t body = cuda::add_conditional(parent, handle, type);
    return std::make_unique<RuntimeBody>(levels_[level - 1], body, handle,
                                         type == cudaGraphCondTypeWhile ? flag : nullptr);
  }

  void branch(const at::Tensor& predicate, cudaGraphConditionalNodeType type, int level,
              const std::vector<std::function<void()>>& bodies) override {
    check_depth(level);
    const cudaStream_t parent = at::cuda::getCurrentCUDAStream().stream();
    const cudaGraphConditionalHandle handle = cuda::make_condition(parent);
    if (type == cudaGraphCondTypeSwitch)
      cuda::launch_set_condition_from_index(handle, predicate.data_ptr<int>(), parent);
    else
      cuda::launch_set_condition_from(handle, predicate.data_ptr<bool>(), parent);
    const std::vector<cudaGraph_t> graphs =
        cuda::add_conditional(parent, handle, type, static_cast<unsigned>(bodies.size()));
    // The bodies one after another on the level's stream: each capture ends before the next begins.
    for (size_t i = 0; i < bodies.size(); ++i) {
      RuntimeBody body(levels_[level - 1], graphs[i], handle, nullptr);
      bodies[i]();
      body.end();
    }
  }

  void launch() override {
    CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec_.get(), at::cuda::getCurrentCUDAStream().stream()));
  }
  const char* name() const override { return "runtime_api"; }

 private:
  std::vector<cuda::Stream> owned_;
  std::vector<at::cuda::CUDAStream> levels_;  // the same streams, as LibTorch sees them
  GraphMemoryPool pool_;                      // declared before the graph: released after it is destroyed
  cuda::Graph graph_;
  cuda::GraphExec exec_;
};

}  // namespace

ConditionalGraph::ConditionalGraph(int levels, Nodes nodes) {
#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
  if (nodes == Nodes::if_while) {
    route_ = std::make_unique<NativeRoute>(levels);
    return;
  }
#else
  (void)nodes;
#endif
  route_ = std::make_unique<RuntimeRoute>(levels);
}
ConditionalGraph::~ConditionalGraph() = default;

std::vector<at::cuda::CUDAStream> ConditionalGraph::streams(const at::cuda::CUDAStream& side) const {
  return route_->streams(side);
}

void ConditionalGraph::capture(const at::cuda::CUDAStream& side, const std::function<void()>& body) {
  route_->capture(side, body);
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_if(const at::Tensor& predicate, int level) {
  return route_->open(predicate, cudaGraphCondTypeIf, level);
}

std::unique_ptr<ConditionalGraph::Body> ConditionalGraph::open_while(const at::Tensor& predicate, int level) {
  return route_->open(predicate, cudaGraphCondTypeWhile, level);
}

void ConditionalGraph::if_else(const at::Tensor& predicate, int level, const std::function<void()>& then,
                               const std::function<void()>& otherwise) {
  route_->branch(predicate, cudaGraphCondTypeIf, level, {then, otherwise});
}

void ConditionalGraph::switch_on(const at::Tensor& index, int level, const std::vector<std::function<void()>>& cases) {
  route_->branch(index, cudaGraphCondTypeSwitch, level, cases);
}

void ConditionalGraph::launch() { route_->launch(); }

const char* ConditionalGraph::route() const { return route_->name(); }

}  // namespace condbench
