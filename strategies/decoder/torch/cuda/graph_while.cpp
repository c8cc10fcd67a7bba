// graph_while (decoder, engine torch, CUDA): the decode step as two WHILE loops (conditional_step.h's
// loop_step): the exits' segments while some row runs, a SWITCH in the loop running the segment a
// device-side counter names; then the remaining segments' keys and values. Captured and replayed
// as device_decided_strategy.h says. Its bodies nest two deep at any depth of the model, and each
// layer is in the graph once (graph_cond holds the deeper projections once per exit).
#include "decoder/torch/cuda/device_decided_strategy.h"

namespace condbench {
namespace {

class DecodeGraphWhile final : public DeviceDecidedStrategy {
 public:
  using DeviceDecidedStrategy::DeviceDecidedStrategy;

 protected:
  int nesting(const DecoderConfig& /*c*/) const override { return 2; }
  void decode(const at::Tensor& h, const Parts& parts, const Branches& branches) override {
    loop_step(*decoder_, h, state_, parts, branches.pick, branches.loop);
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeGraphWhile, "graph_while", Engine::torch, Device::cuda,
                            "one CUDA graph per step, a WHILE node over the exits, a SWITCH on the next one");

}  // namespace condbench
