// fused (engine native, CPU): the floor. The whole early-exit forward as one loop nest over the
// shared math of exit_math.h, no framework in the hot path: each row runs its blocks until an
// exit fires, writing straight into the output buffers allocated in prepare().
#include <ATen/ATen.h>

#include <algorithm>

#include "condbench/exit_math.h"
#include "condbench/flops.h"
#include "condbench/strategy.h"

namespace condbench {
namespace {

class FusedCpu final : public Strategy {
 public:
  using Strategy::Strategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    native_ = model->native();
    const ModelConfig& config = native_.config;
    exit_id_ = at::empty({batch}, at::kInt);
    logits_ = at::empty({batch, config.num_classes}, at::kFloat);
    const size_t width = static_cast<size_t>(std::max(config.in_features, config.hidden));
    ping_.assign(width, 0.0f);
    pong_.assign(width, 0.0f);
    for (int k = 0; k < config.blocks; ++k) stage_flops_.push_back(block_flops(config, k) + head_flops(config));
  }

  ExitOutput run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const ModelConfig& config = native_.config;
    const int64_t batch = input.size(0);
    const float* x = input.data_ptr<float>();
    int32_t* exit_id = exit_id_.data_ptr<int32_t>();
    float* logits = logits_.data_ptr<float>();
    double flops = 0.0;
    for (int64_t r = 0; r < batch; ++r) {
      float* out = logits + r * config.num_classes;
      const int id = forward_row(x + r * config.in_features, thresholds, out, flops);
      exit_id[r] = id;
    }
    counters_.flops_executed = flops;
    return {exit_id_, logits_};
  }

 private:
  // One row's early-exit forward; writes the winning head's logits to `out`, returns the exit id.
  int forward_row(const float* x, const std::vector<float>& thresholds, float* out, double& flops) {
    const ModelConfig& config = native_.config;
    const float* h = x;
    float* next = ping_.data();
    for (int k = 0; k < config.blocks; ++k) {
      const NativeLinear& block = native_.blocks[k];
      math::linear_row(block.wt.data(), block.bias.data(), h, block.in, block.out, block.pitch, next, true);
      h = next;
      next = next == ping_.data() ? pong_.data() : ping_.data();
      const NativeLinear& head = native_.heads[k];
      math::linear_row(head.wt.data(), head.bias.data(), h, head.in, head.out, head.pitch, out, false);
      flops += stage_flops_[k];
      if (math::exit_fires(math::max_softmax(out, config.num_classes), thresholds[k])) return k + 1;
    }
    const NativeLinear& final_head = native_.heads[config.blocks];
    math::linear_row(final_head.wt.data(), final_head.bias.data(), h, final_head.in, final_head.out,
                     final_head.pitch, out, false);
    flops += head_flops(config);
    return config.final_exit();
  }

  NativeModel native_;
  std::vector<double> stage_flops_;
  std::vector<float> ping_, pong_;
  at::Tensor exit_id_, logits_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu);

}  // namespace condbench
