// segmented_graph (engine torch, CUDA): one captured graph per block + exit head, and the host
// deciding between replays — the "compile each block, branch on the host" approach. Shapes are
// fixed inside a graph, so each stage runs on the whole batch with rows already decided masked
// out; after each stage the host reads one flag, "any row left", and stops when none is.
#include <ATen/cuda/CUDAGraph.h>

#include <memory>

#include "condbench/flops.h"
#include "condbench/torch_cuda.h"
#include "torch/cuda/torch_graph_support.h"
#include "torch/torch_strategy.h"

namespace condbench {
namespace {

class SegmentedGraph final : public TorchStrategy {
 public:
  static constexpr bool kHostDecides = true;
  using TorchStrategy::TorchStrategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    const ModelConfig& config = layers_->config();
    io_.allocate(config, batch);
    output() = {io_.exit_id, io_.logits};
    any_left_host_ = at::empty({1}, at::TensorOptions().dtype(at::kBool).pinned_memory(true));
    thresholds_.allocate(config.blocks);
    hidden_.assign(config.blocks, at::Tensor());
    any_left_.assign(config.blocks, at::Tensor());

    const at::cuda::CUDAStream side = capture_stream();
    const c10::cuda::CUDAStreamGuard on_side(side);
    for (int k = 0; k <= config.blocks; ++k) stage(k);  // warm-up, eagerly
    side.synchronize();
    capture_layers(config, [&] {
      const auto pool = at::cuda::graph_pool_handle();  // one pool: stage k reads what stage k-1 left
      graphs_.clear();
      for (int k = 0; k <= config.blocks; ++k) {
        graphs_.push_back(std::make_unique<at::cuda::CUDAGraph>());
        TorchGraphCapture capture(*graphs_.back(), pool);
        stage(k);
        capture.end();
      }
    });
    side.synchronize();
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const ModelConfig& config = layers_->config();
    const int blocks = config.blocks;
    const double rows = static_cast<double>(io_.input.size(0));
    thresholds_.update(thresholds);
    io_.input.copy_(input, /*non_blocking=*/true);
    for (int k = 0; k < blocks; ++k) {
      graphs_[k]->replay();
      ++record().launches;  // a replay is not an ATen call: recorded here
      record().flops_executed += rows * (block_flops(config, k) + head_flops(config, k));
      readback_.read(any_left_[k].view({1}), any_left_host_);  // the host decides
      ++record().host_syncs;
      record().bytes_read_back += 1;  // one bool: is any row left?
      if (!any_left_host_.data_ptr<bool>()[0]) return output();
    }
    graphs_[blocks]->replay();
    ++record().launches;
    record().flops_executed += rows * head_flops(config, config.blocks);
    return output();
  }

 private:
  // Stage k < blocks: block k, head k, exit test k for the rows not yet decided. Stage blocks: the
  // final head for the rows left.
  void stage(int k) {
    const int blocks = layers_->config().blocks;
    if (k == blocks) {
      const at::Tensor logits = layers_->head(blocks, hidden_[blocks - 1]);
      merge_exit(io_.decided.logical_not(), logits, blocks + 1, io_.logits, io_.exit_id, io_.decided);
      return;
    }
    if (k == 0) io_.decided.zero_();
    const at::Tensor& x = k == 0 ? io_.input : hidden_[k - 1];
    hidden_[k] = layers_->block(k, x);
    const at::Tensor logits = layers_->head(k, hidden_[k]);
    const at::Tensor fire = layers_->exit_test(logits, thresholds_.at(k)).logical_and_(io_.decided.logical_not());
    merge_exit(fire, logits, k + 1, io_.logits, io_.exit_id, io_.decided);
    any_left_[k] = io_.decided.logical_not().any();
  }

  std::shared_ptr<const TorchLayers> layers_;
  CapturedIO io_;
  at::Tensor any_left_host_;
  torch_cuda::PinnedReadback readback_;
  std::vector<at::Tensor> hidden_, any_left_;
  DeviceThresholds thresholds_;
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(SegmentedGraph, "segmented_graph", Engine::torch, Device::cuda,
                            "one CUDA graph per block and head; the host reads the decision between replays");

}  // namespace condbench
