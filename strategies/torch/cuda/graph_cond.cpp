// graph_cond (engine torch, CUDA): one CUDA graph whose exits are conditional IF nodes with
// LibTorch ops inside the bodies — what torch.cond under CUDA-graph capture does in PyTorch 2.12+.
// Stage 0 runs unconditionally and pre-sets every output to its exit's result; each later stage,
// and finally the final head, sits in an IF nested in the previous one, taken only while some row
// is undecided. A skipped body leaves outputs that are already right. Each block's stage also adds
// one to an 8-byte device counter of blocks and heads (one more tiny kernel per body, and one in
// the final head's), so the blocks_run and heads_run counters show which bodies ran: outputs alone
// cannot, since a body run for nothing merges no row.
//
// The IF nodes are ConditionalGraph's (conditional_graph.h: LibTorch's own conditional capture,
// or the CUDA runtime's where LibTorch has none).
#include <memory>

#include "condbench/cuda/stuck_condition.h"
#include "condbench/flops.h"
#include "condbench/torch_cuda.h"
#include "torch/cuda/conditional_graph.h"
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

    const at::cuda::CUDAStream side = capture_stream();
    graph_ = std::make_unique<ConditionalGraph>(config.blocks);
    // Warm up every branch on every stream a body will be captured on.
    for (const at::cuda::CUDAStream& stream : graph_->streams(side)) {
      const c10::cuda::CUDAStreamGuard on(stream);
      at::Tensor h = stage(0, io_.input);
      for (int s = 1; s < config.blocks; ++s) h = stage(s, h);
      final_stage(h);
      stream.synchronize();
    }
    capture_layers(config, [&] { graph_->capture(side, [&] { nest(1, stage(0, io_.input)); }); });
    side.synchronize();
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    thresholds_.update(thresholds);
    io_.input.copy_(input, /*non_blocking=*/true);
    graph_->launch();
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
  // Block s, head s and exit test s for the rows not yet decided (stage 0 decides every row's
  // initial result). Returns the block's activations.
  at::Tensor stage(int s, const at::Tensor& x) {
    const at::Tensor h = layers_->block(s, x);
    const at::Tensor logits = layers_->head(s, h);
    const at::Tensor fire = layers_->exit_test(logits, thresholds_.at(s));
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
    const std::unique_ptr<ConditionalGraph::Body> body = graph_->open_if(undecided, s);
    if (s < layers_->config().blocks)
      nest(s + 1, stage(s, h));
    else
      final_stage(h);
    body->end();
  }

  std::unique_ptr<ConditionalGraph> graph_;

  std::shared_ptr<const TorchLayers> layers_;
  CapturedIO io_;
  at::Tensor stages_run_;  // int32 [blocks, heads] run by the last inference, written inside the graph
  DeviceThresholds thresholds_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(GraphCondTorch, "graph_cond", Engine::torch, Device::cuda,
                            "LibTorch ops captured into nested IF nodes; an exit-test kernel sets each handle");

}  // namespace condbench
