// graph_cond (engine torch, CUDA): one CUDA graph whose exits are conditional IF nodes with
// LibTorch ops inside the bodies — what torch.cond under CUDA-graph capture does in PyTorch 2.12+.
// Stage 0 runs unconditionally and pre-sets every output to its exit's result; each later stage,
// and finally the final head, sits in an IF nested in the previous one, taken only while some row
// is undecided. A skipped body leaves outputs that are already right.
//
// Two routes to the IF nodes, chosen at configure time by a compile check (CMakeLists.txt), not
// by a version string:
//  - native_api: at::cuda::CUDAGraph::begin_capture_to_if_node / end_capture_to_conditional_node
//    (LibTorch sets the handle from a 0-dim predicate tensor and routes the allocator);
//  - runtime_api: the CUDA runtime. The node is added to the capturing graph
//    (cudaStreamGetCaptureInfo + cudaGraphAddNode + cudaStreamUpdateCaptureDependencies), a kernel
//    of ours sets its handle from the predicate, the body is captured on a pool stream with
//    cudaStreamBeginCaptureToGraph, and the caching allocator is routed to the graph's pool for
//    that stream while the body is captured, as PyTorch does.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <memory>
#include <stack>

#include "../torch_strategy.h"
#include "condbench/cuda/primitives.h"
#include "condbench/cuda/resources.h"
#include "condbench/flops.h"
#include "condbench/torch_cuda.h"
#include "torch_graph_support.h"

namespace condbench {
namespace {

class GraphCondTorch final : public TorchStrategy {
 public:
  using TorchStrategy::TorchStrategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    const ModelConfig& config = layers_.config;
    io_.allocate(config, batch);
    thresholds_.allocate(config.blocks);

    const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    levels_.clear();
    for (int s = 1; s <= config.blocks; ++s) levels_.push_back(at::cuda::getStreamFromPool());
    // Warm up every branch on every stream a body will be captured on: a path never run eagerly
    // would initialise cuBLAS inside a body, which a capture cannot hold.
    for (const at::cuda::CUDAStream& stream : streams_used(side)) {
      const c10::cuda::CUDAStreamGuard on(stream);
      at::Tensor h = stage(0, io_.input);
      for (int s = 1; s < config.blocks; ++s) h = stage(s, h);
      final_stage(h);
      stream.synchronize();
    }
    {
      const c10::cuda::CUDAStreamGuard on_side(side);
      graph_.capture_begin();
      nest(1, stage(0, io_.input));
      graph_.capture_end();
    }
    side.synchronize();
  }

  ExitOutput run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    thresholds_.update(thresholds);
    io_.input.copy_(input, /*non_blocking=*/true);
    graph_.replay();
    return {io_.exit_id, io_.logits};
  }

  // Outside the timed region: which stages ran follows from the deepest exit taken, and each
  // stage that ran computed every row of the batch.
  InferenceCounters counters() const override {
    const ModelConfig& config = layers_.config;
    const at::Tensor ids = io_.exit_id.to(at::kCPU);
    const int deepest = ids.numel() ? ids.max().item<int>() : 1;
    InferenceCounters c;
    c.launches = 2;  // the input copy and the graph launch
    c.host_syncs = 0;
    for (int k = 0; k < std::min(deepest, config.blocks); ++k) c.flops_executed += block_flops(config, k) + head_flops(config);
    if (deepest == config.final_exit()) c.flops_executed += head_flops(config);
    c.flops_executed *= static_cast<double>(ids.numel());
    return c;
  }

 private:
  std::vector<at::cuda::CUDAStream> streams_used(const at::cuda::CUDAStream& side) const {
    std::vector<at::cuda::CUDAStream> all{side};
    all.insert(all.end(), levels_.begin(), levels_.end());
    return all;
  }

  // Block s, head s and exit test s for the rows not yet decided (stage 0 decides every row's
  // initial result). Returns the block's activations.
  at::Tensor stage(int s, const at::Tensor& x) {
    const at::Tensor h = at::relu(at::linear(x, layers_.block_weight[s], layers_.block_bias[s]));
    const at::Tensor logits = at::linear(h, layers_.head_weight[s], layers_.head_bias[s]);
    const at::Tensor fire = at::softmax(logits, -1).amax(-1) > thresholds_.at(s);
    if (s == 0) {
      io_.logits.copy_(logits);  // pre-set: right for rows leaving here, overwritten for the rest
      io_.exit_id.fill_(1);
      io_.decided.copy_(fire);
    } else {
      merge_exit(fire.logical_and(io_.decided.logical_not()), logits, s + 1, io_.logits, io_.exit_id, io_.decided);
    }
    return h;
  }

  void final_stage(const at::Tensor& h) {
    const int blocks = layers_.config.blocks;
    const at::Tensor logits = at::linear(h, layers_.head_weight[blocks], layers_.head_bias[blocks]);
    merge_exit(io_.decided.logical_not(), logits, blocks + 1, io_.logits, io_.exit_id, io_.decided);
  }

  // IF (some row undecided) { stage s; IF (...) { ... IF (...) { final head } } }
  void nest(int s, const at::Tensor& h) {
    begin_if(io_.decided.logical_not().any(), s);
    if (s < layers_.config.blocks)
      nest(s + 1, stage(s, h));
    else
      final_stage(h);
    end_if();
  }

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
  void begin_if(const at::Tensor& predicate, int) { graph_.begin_capture_to_if_node(predicate); }
  void end_if() { graph_.end_capture_to_conditional_node(); }
#else
  void begin_if(const at::Tensor& predicate, int s) {
    const cudaStream_t outer = at::cuda::getCurrentCUDAStream().stream();
    const cudaGraphConditionalHandle handle = cuda::make_condition(outer);
    cuda::launch_set_condition_from(handle, predicate.data_ptr<bool>(), outer);
    const cudaGraph_t body = cuda::add_conditional(outer, handle, cudaGraphCondTypeIf);
    const at::cuda::CUDAStream inner = levels_[s - 1];
    const cudaStream_t raw = inner.stream();
    // Body allocations come from the graph's pool, like those of the enclosing capture.
    c10::cuda::CUDACachingAllocator::beginAllocateToPool(0, graph_.pool(), [raw](cudaStream_t st) { return st == raw; });
    bodies_.push(std::make_unique<Body>(inner, body));
  }
  void end_if() {
    bodies_.top()->capture.end();
    bodies_.pop();
    c10::cuda::CUDACachingAllocator::endAllocateToPool(0, graph_.pool());
  }

  // An IF body being captured: the stream guard and the capture scope, closed in reverse order.
  struct Body {
    Body(const at::cuda::CUDAStream& stream, cudaGraph_t graph) : capture(stream.stream(), graph), guard(stream) {}
    cuda::CaptureScope capture;
    c10::cuda::CUDAStreamGuard guard;
  };
  std::stack<std::unique_ptr<Body>> bodies_;
#endif

  TorchLayers layers_;
  CapturedIO io_;
  DeviceThresholds thresholds_;
  std::vector<at::cuda::CUDAStream> levels_;
  at::cuda::CUDAGraph graph_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(GraphCondTorch, "graph_cond", Engine::torch, Device::cuda);

}  // namespace condbench
