// fused (engine native, CUDA): the floor. The whole early-exit forward in one kernel launch, every
// exit decided on the device: no host decision, no per-stage launches, nothing captured. Up to
// hidden 128 a thread block per row (per 4 rows from batch 4), each block stopping when its rows
// have left; wider, one persistent cooperative grid over every multiprocessor with a grid-wide
// barrier between dependent layers, which returns as a whole once no row runs (fused.h,
// linear_plan.h's choose_fused_kernel).
#include "native/cuda/fused.h"

#include <algorithm>

#include "condbench/flops.h"
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class FusedCuda final : public NativeCudaStrategy {
 public:
  using NativeCudaStrategy::NativeCudaStrategy;
  static constexpr bool kSingleLaunch = true;

  static Unsupported supports(const ModelConfig& config, Device /*device*/, int64_t batch) {
    if (Unsupported why = mlp_only(config)) return why;
    return fused_unsupported(config.size("hidden"), config.num_classes, static_cast<int>(batch));
  }

 protected:
  void build() override { launch_ = fused_prepare(state(), multiprocessors()); }

  int64_t enqueue() override {
    launch_fused(launch_, state(), table(), stream());
    return 1;
  }

  // Blocks and heads are not counted: the single-block kernel's thread blocks each stop on their
  // own, and neither kernel keeps the stage counters.
  void read_stage_counts(InferenceCounters& /*record*/) const override {}

  // The persistent kernel counts its FLOPs on the device, as the stage kernels do. The single-block
  // kernel computes each block's rows as far as the deepest of them goes (no device counter to
  // reset per launch); a last block short of rows computes row 0 again in their place, not counted.
  double executed_flops() const override {
    if (launch_.kernel == FusedKernel::persistent) return NativeCudaStrategy::executed_flops();
    const at::Tensor ids = exit_ids().to(at::kCPU);
    ModelConfig config = model_config("mlp");
    config.set("in_features", state().in_features).set("hidden", state().hidden_size);
    config.num_classes = state().num_classes;
    config.blocks = state().blocks;
    const int* id = ids.data_ptr<int>();
    double flops = 0.0;
    for (int64_t row0 = 0; row0 < ids.numel(); row0 += launch_.rows) {
      int deepest = 1;
      for (int64_t r = row0; r < std::min<int64_t>(ids.numel(), row0 + launch_.rows); ++r)
        deepest = std::max(deepest, id[r]);
      flops += static_cast<double>(std::min<int64_t>(launch_.rows, ids.numel() - row0)) * useful_flops(config, deepest);
    }
    return flops;
  }

 private:
  FusedLaunch launch_{1, 0};
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCuda, "fused", Engine::native, Device::cuda,
                            "the whole early-exit forward in one kernel, every exit decided on the device");

}  // namespace condbench::cuda
