// graph_cond (engine torch, CUDA): one CUDA graph whose exits are conditional IF nodes with
// LibTorch ops inside the bodies — what torch.cond under CUDA-graph capture does in PyTorch 2.12+.
// Stage 0 runs unconditionally and pre-sets every output to its exit's result; each later stage,
// and finally the final head, sits in an IF nested in the previous one, taken only while some row
// is undecided. A skipped body leaves outputs that are already right. Each block's stage also adds
// one to an 8-byte device counter of blocks and heads (one more tiny kernel per body, and one in
// the final head's), so the blocks_run and heads_run counters show which bodies ran: outputs alone
// cannot, since a body run for nothing merges no row.
//
// Two routes to the IF nodes, chosen at configure time by a compile check (CMakeLists.txt; the
// CONDBENCH_TORCH_CONDITIONAL_ROUTE option forces one), not by a version string:
//  - native_api: at::cuda::CUDAGraph::begin_capture_to_if_node / end_capture_to_conditional_node
//    (LibTorch sets the handle from a 0-dim predicate tensor and hands the allocator's routing
//    from the parent capture to the body and back);
//  - runtime_api, for LibTorch without them (2.11 and older): the graph is condbench's own. The
//    capture is a cuda::CaptureScope on a side stream, each IF node is added to the capturing
//    graph (cudaGraphAddNode + cudaStreamUpdateCaptureDependencies), a kernel of ours sets its
//    handle from the predicate, and the body is captured on a stream of its own with
//    cudaStreamBeginCaptureToGraph. LibTorch's caching allocator routes every allocation made on
//    those streams while they capture into one private pool (GraphMemoryPool), which outlives the
//    graph; the graph is instantiated and launched with the runtime API. CUDAGraph is not used
//    here at all: its pool() answers only after a capture has ended, and beginAllocateToPool on
//    the pool an open CUDAGraph capture records to throws.
#include <ATen/cuda/CUDAGraph.h>

#include <algorithm>
#include <memory>

#include "condbench/cuda/resources.h"
#include "condbench/cuda/stuck_condition.h"
#include "condbench/flops.h"
#include "condbench/torch_cuda.h"
#include "torch/cuda/graph_cond.h"
#include "torch/cuda/torch_graph_support.h"
#include "torch/torch_strategy.h"

namespace condbench {
namespace {

class GraphCondTorch final : public TorchStrategy {
 public:
  static constexpr bool kSingleLaunch = true;
  static constexpr bool kSkipsBlocksOnDevice = true;
  static constexpr bool kSkipsFinalHeadOnDevice = true;
  using TorchStrategy::TorchStrategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    const ModelConfig& config = layers_->config();
    io_.allocate(config, batch);
    output() = {io_.exit_id, io_.logits};
    thresholds_.allocate(config.blocks);
    stages_run_ = at::zeros({2}, io_.exit_id.options().dtype(at::kInt));

    const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    make_body_streams(config.blocks);
    // Warm up every branch on every stream a body will be captured on: a path never run eagerly
    // would initialise cuBLAS inside a body, which a capture cannot hold.
    for (const at::cuda::CUDAStream& stream : streams_used(side)) {
      const c10::cuda::CUDAStreamGuard on(stream);
      at::Tensor h = stage(0, io_.input);
      for (int s = 1; s < config.blocks; ++s) h = stage(s, h);
      final_stage(h);
      stream.synchronize();
    }
    capture_layers(config, [&] { capture(side); });
    side.synchronize();
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    thresholds_.update(thresholds);
    io_.input.copy_(input, /*non_blocking=*/true);
    launch();
    record().launches += 1;  // the graph launch; the copy is an ATen call, counted as one
    return output();
  }

  // The blocks and heads that ran, from the device's counters; each computed every row of the
  // batch, and the final head ran if the heads outnumber the blocks.
  void do_read_device_counters(const ExitOutput& /*output*/, InferenceCounters& record) const override {
    const ModelConfig& config = layers_->config();
    const at::Tensor counts = stages_run_.to(at::kCPU);
    const int blocks = counts[0].item<int>(), heads = counts[1].item<int>();
    double flops = 0;
    for (int k = 0; k < blocks; ++k) flops += block_flops(config, k) + head_flops(config, k);
    if (heads > blocks) flops += head_flops(config, config.blocks);
    record.flops_executed = flops * static_cast<double>(io_.exit_id.numel());
    record.blocks_run = blocks;
    record.heads_run = heads;
  }

 private:
  // The streams work is captured on: the side stream, and in the runtime route each level's body
  // stream (the native route's body streams are LibTorch's own).
  std::vector<at::cuda::CUDAStream> streams_used(const at::cuda::CUDAStream& side) const {
    std::vector<at::cuda::CUDAStream> all{side};
    all.insert(all.end(), levels_.begin(), levels_.end());
    return all;
  }

  // Block s, head s and exit test s for the rows not yet decided (stage 0 decides every row's
  // initial result). Returns the block's activations.
  at::Tensor stage(int s, const at::Tensor& x) {
    const at::Tensor h = layers_->block(s, x);
    const at::Tensor logits = layers_->head(s, h);
    const at::Tensor fire = layers_->confidence(logits) > thresholds_.at(s);
    if (s == 0) {
      stages_run_.fill_(1);
      io_.logits.copy_(logits);  // pre-set: right for rows leaving here, overwritten for the rest
      io_.exit_id.fill_(1);
      io_.decided.copy_(fire);
    } else {
      stages_run_.add_(1);  // a block and its head
      merge_exit(fire.logical_and(io_.decided.logical_not()), logits, s + 1, io_.logits, io_.exit_id, io_.decided);
    }
    return h;
  }

  void final_stage(const at::Tensor& h) {
    const int blocks = layers_->config().blocks;
    const at::Tensor logits = layers_->head(blocks, h);
    stages_run_[1].add_(1);  // the final head
    merge_exit(io_.decided.logical_not(), logits, blocks + 1, io_.logits, io_.exit_id, io_.decided);
  }

  // IF (some row undecided) { stage s; IF (...) { ... IF (...) { final head } } }
  void nest(int s, const at::Tensor& h) {
    at::Tensor undecided = io_.decided.logical_not().any();
    if (s - 1 == cuda::testing::stuck_condition_level()) undecided.fill_(true);  // a fault the tests inject
    const std::unique_ptr<IfBody> body = open_if(undecided, s);
    if (s < layers_->config().blocks)
      nest(s + 1, stage(s, h));
    else
      final_stage(h);
    body->end();
  }

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
  using IfBody = TorchIfBody;

  void make_body_streams(int) {}

  void capture(const at::cuda::CUDAStream& side) {
    const c10::cuda::CUDAStreamGuard on_side(side);
    TorchGraphCapture capture(graph_, at::cuda::graph_pool_handle());
    nest(1, stage(0, io_.input));
    capture.end();
  }
  std::unique_ptr<IfBody> open_if(const at::Tensor& predicate, int) {
    return std::make_unique<TorchIfBody>(graph_, predicate);
  }
  void launch() { graph_.replay(); }

  at::cuda::CUDAGraph graph_;
#else
  // An IF body being captured on its own stream: the capture scope, and that stream made current
  // for LibTorch; closed (or, on unwinding, abandoned) in reverse order.
  struct IfBody {
    IfBody(const at::cuda::CUDAStream& stream, cudaGraph_t graph) : capture(stream.stream(), graph), current(stream) {}
    void end() { capture.end(); }
    cuda::CaptureScope capture;
    c10::cuda::CUDAStreamGuard current;
  };

  // One stream of its own per nesting level (a body is captured while its parent's capture is
  // open, so no two levels may share a stream; LibTorch's stream pool would repeat after 32).
  void make_body_streams(int blocks) {
    levels_.clear();
    level_streams_.clear();
    for (int s = 1; s <= blocks; ++s) {
      level_streams_.push_back(cuda::make_stream());
      levels_.push_back(at::cuda::getStreamFromExternal(level_streams_.back().get(), c10::cuda::current_device()));
    }
  }

  void capture(const at::cuda::CUDAStream& side) {
    const c10::cuda::CUDAStreamGuard on_side(side);
    std::vector<cudaStream_t> ours;
    for (const at::cuda::CUDAStream& stream : streams_used(side)) ours.push_back(stream.stream());
    const std::unique_ptr<PairedScope> routing = pool_.route([ours](cudaStream_t stream) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      return std::find(ours.begin(), ours.end(), stream) != ours.end() &&
             cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
    });
    cuda::CaptureScope capture(side.stream());
    nest(1, stage(0, io_.input));
    graph_ = cuda::Graph(capture.end());
    routing->close();
    exec_ = cuda::instantiate(graph_);
  }
  std::unique_ptr<IfBody> open_if(const at::Tensor& predicate, int s) {
    const cudaStream_t parent = at::cuda::getCurrentCUDAStream().stream();
    const cudaGraphConditionalHandle handle = cuda::make_condition(parent);
    cuda::launch_set_condition_from(handle, predicate.data_ptr<bool>(), parent);
    const cudaGraph_t body = cuda::add_conditional(parent, handle, cudaGraphCondTypeIf);
    return std::make_unique<IfBody>(levels_[s - 1], body);
  }
  void launch() { CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec_.get(), at::cuda::getCurrentCUDAStream().stream())); }

  std::vector<cuda::Stream> level_streams_;
  GraphMemoryPool pool_;  // declared before the graph: released after it is destroyed
  cuda::Graph graph_;
  cuda::GraphExec exec_;
#endif

  std::shared_ptr<const TorchLayers> layers_;
  CapturedIO io_;
  at::Tensor stages_run_;  // int32 [blocks, heads] run by the last inference, written inside the graph
  DeviceThresholds thresholds_;
  std::vector<at::cuda::CUDAStream> levels_;  // the runtime route's body streams, as LibTorch sees them
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(GraphCondTorch, "graph_cond", Engine::torch, Device::cuda,
                            "LibTorch ops captured into nested IF nodes; an exit-test kernel sets each handle");

}  // namespace condbench
