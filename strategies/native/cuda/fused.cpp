// fused (engine native, CUDA): the floor. The whole early-exit forward in one kernel launch, one
// thread block per row (per 4 rows from batch 4), each block stopping when its rows have left: no
// host decision, no per-stage launches, nothing captured.
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

  static Unsupported supports(const ModelConfig& config, Device /*device*/, int64_t /*batch*/) {
    if (Unsupported why = mlp_only(config)) return why;
    return fused_unsupported(config.size("hidden"), config.num_classes);
  }

 protected:
  void build() override { launch_ = fused_prepare(state().batch, state().hidden_size, state().num_classes); }

  int64_t enqueue() override {
    launch_fused(launch_, state(), table(), stream());
    return 1;
  }

  // Each block computes its rows as far as the deepest of them goes (no device counter to reset
  // per launch). A last block short of rows computes row 0 again in their place; not counted.
  // Blocks and heads are not counted: each thread block stops on its own, and no kernel resets a
  // counter.
  void read_stage_counts(InferenceCounters& /*record*/) const override {}

  double executed_flops() const override {
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
                            "the whole early-exit forward in one kernel: the GPU floor");

}  // namespace condbench::cuda
