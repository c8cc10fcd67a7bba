// masked_graph (engine torch, CUDA): `masked` captured once with at::cuda::CUDAGraph on a side
// stream and replayed per inference; the caller's input is copied into the captured input tensor.
// Two host-issued operations per inference: that copy and the replay.
#include <ATen/cuda/CUDAGraph.h>

#include "condbench/flops.h"
#include "torch/cuda/torch_graph_support.h"
#include "torch/masked.h"
#include "torch/torch_strategy.h"

namespace condbench {
namespace {

class MaskedGraph final : public TorchStrategy {
 public:
  static constexpr bool kSingleLaunch = true;
  using TorchStrategy::TorchStrategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    const auto options = at::TensorOptions().device(at::kCUDA, 0);
    static_input_ = at::zeros(layers_->config().input_shape(batch), options.dtype(input_dtype(layers_->config())));
    final_exit_id_ = at::full({batch}, layers_->config().final_exit(), options.dtype(at::kInt));
    thresholds_.allocate(layers_->config().blocks);
    const at::cuda::CUDAStream side = capture_stream();
    {
      const c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 3; ++i) forward();  // warm-up: cuBLAS handles and workspaces exist before capture
      side.synchronize();
      capture_layers(layers_->config(), [&] {
        TorchGraphCapture capture(graph_, at::cuda::graph_pool_handle());
        output() = forward();
        capture.end();
      });
    }
    side.synchronize();
    flops_ = static_cast<double>(batch) * full_model_flops(layers_->config());
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    thresholds_.update(thresholds);
    static_input_.copy_(input, /*non_blocking=*/true);
    graph_.replay();
    record().launches += 1;  // the replay; the copy is an ATen call, counted as one
    record().flops_executed = flops_;
    return output();
  }

 private:
  ExitOutput forward() {
    return masked_forward(*layers_, static_input_, final_exit_id_, [&](int k) { return thresholds_.at(k); });
  }

  std::shared_ptr<const TorchLayers> layers_;
  at::Tensor static_input_, final_exit_id_;
  DeviceThresholds thresholds_;
  at::cuda::CUDAGraph graph_;
  double flops_ = 0;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(MaskedGraph, "masked_graph", Engine::torch, Device::cuda,
                            "masked captured once into a CUDA graph, replayed per inference");

}  // namespace condbench
