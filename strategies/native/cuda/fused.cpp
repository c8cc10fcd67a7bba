// fused (engine native, CUDA): the floor. The whole early-exit forward in one kernel launch, one
// thread block per row, each block stopping at its row's own exit: no host decision, no per-stage
// launches, nothing captured.
#include "native/cuda/fused.h"
#include "condbench/flops.h"
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class FusedCuda final : public NativeCudaStrategy {
 public:
  using NativeCudaStrategy::NativeCudaStrategy;
  static constexpr bool kSingleLaunch = true;

  static Unsupported supports(const ModelConfig& config, Device /*device*/, int64_t /*batch*/) {
    return fused_unsupported(config.hidden, config.num_classes);
  }

 protected:
  void build() override { fused_prepare(state().hidden_size, state().num_classes); }

  int64_t enqueue() override {
    launch_fused(state(), table(), stream());
    return 1;
  }

  // Each block runs exactly its row's path (no device counter to reset per launch).
  double executed_flops() const override {
    const at::Tensor ids = exit_ids().to(at::kCPU);
    ModelConfig config;
    config.in_features = state().in_features;
    config.hidden = state().hidden_size;
    config.num_classes = state().num_classes;
    config.blocks = state().blocks;
    double flops = 0.0;
    for (int64_t r = 0; r < ids.numel(); ++r) flops += useful_flops(config, ids[r].item<int>());
    return flops;
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCuda, "fused", Engine::native, Device::cuda,
                            "the whole early-exit forward in one kernel: the GPU floor");

}  // namespace condbench::cuda
