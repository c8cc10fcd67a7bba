// masked (engine torch): every block and every head for every row; each row's result is picked
// on the device with `where`, so nothing is read on the host until the caller wants the result.
#include "torch/masked.h"

#include "condbench/flops.h"
#include "torch/torch_strategy.h"

namespace condbench {
namespace {

class Masked final : public TorchStrategy {
 public:
  using TorchStrategy::TorchStrategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    final_exit_id_ = at::full({batch}, layers_->config().final_exit(),
                              at::TensorOptions().device(torch_device(device())).dtype(at::kInt));
    flops_ = static_cast<double>(batch) * full_model_flops(layers_->config());
    bytes_ = full_model_bytes(layers_->config());
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    record().flops_executed = flops_;  // the same work whatever the input
    record().bytes_read = bytes_ + static_cast<double>(input.nbytes());
    return keep(masked_forward(*layers_, input, final_exit_id_, [&](int k) { return thresholds[k]; }));
  }

 private:
  std::shared_ptr<const TorchLayers> layers_;
  at::Tensor final_exit_id_;
  double flops_ = 0, bytes_ = 0;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(Masked, "masked", Engine::torch,
                                         "runs every block and head for every row; picks each row's logits with where");

}  // namespace condbench
