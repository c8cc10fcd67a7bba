// masked (engine torch): every block and every head for every row; each row's result is picked
// on the device with `where`, so nothing is read on the host until the caller wants the result.
#include <ATen/ATen.h>

#include "condbench/flops.h"
#include "condbench/strategy.h"
#include "condbench/torch_device.h"

namespace condbench {
namespace {

class Masked final : public Strategy {
 public:
  using Strategy::Strategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    const ModelConfig& config = layers_.config;
    final_exit_id_ = at::full({batch}, config.final_exit(),
                              at::TensorOptions().device(torch_device(device())).dtype(at::kInt));
    head_logits_.resize(config.blocks);
    fires_.resize(config.blocks);
    // The same work whatever the input: fixed counters.
    work_.launches = 8 * config.blocks + 1;  // per stage 6 ops + 2 wheres; the final linear
    work_.flops_executed = static_cast<double>(batch) * full_model_flops(config);
  }

  ExitOutput run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const ModelConfig& config = layers_.config;
    at::Tensor h = input;
    for (int k = 0; k < config.blocks; ++k) {
      h = at::relu(at::linear(h, layers_.block_weight[k], layers_.block_bias[k]));
      head_logits_[k] = at::linear(h, layers_.head_weight[k], layers_.head_bias[k]);
      fires_[k] = at::softmax(head_logits_[k], -1).amax(-1) > thresholds[k];
    }
    at::Tensor logits = at::linear(h, layers_.head_weight[config.blocks], layers_.head_bias[config.blocks]);
    at::Tensor exit_id = final_exit_id_;
    // Walk the exits from last to first so that the first exit that fires is the one that stays.
    for (int k = config.blocks - 1; k >= 0; --k) {
      logits = at::where(fires_[k].unsqueeze(1), head_logits_[k], logits);
      exit_id = at::where(fires_[k], k + 1, exit_id);
    }
    counters_ = work_;
    return {exit_id, logits};
  }

 private:
  TorchLayers layers_;
  at::Tensor final_exit_id_;
  std::vector<at::Tensor> head_logits_, fires_;
  InferenceCounters work_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(Masked, "masked", Engine::torch, Device::cpu);

}  // namespace condbench
