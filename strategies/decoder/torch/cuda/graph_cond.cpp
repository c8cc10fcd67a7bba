// graph_cond (decoder, engine torch, CUDA): the decode step with a conditional IF-ELSE node at each
// exit (conditional_step.h's conditional_step: while some row runs, the next exit's layers for the
// batch; else only the deeper layers' keys and values), captured and replayed as
// device_decided_strategy.h says. Its IF-ELSE nodes nest as deep as the exits.
#include "decoder/torch/cuda/device_decided_strategy.h"

namespace condbench {
namespace {

class DecodeGraphCond final : public DeviceDecidedStrategy {
 public:
  using DeviceDecidedStrategy::DeviceDecidedStrategy;

 protected:
  int nesting(const DecoderConfig& c) const override { return c.num_exits() - 1; }
  void decode(const at::Tensor& h, const Parts& parts, const Branches& branches) override {
    conditional_step(*decoder_, h, state_, parts, branches.either);
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeGraphCond, "graph_cond", Engine::torch, Device::cuda,
                            "one CUDA graph per step, an IF-ELSE node at each exit: next layers or projections");

}  // namespace condbench
