// cond (decoder, engine aoti): the peer's nested torch.cond decode step (py_cond's: at each exit
// cond(confidence > t, propagate and leave, the next layers), the cache an operand of every
// branch) exported and compiled by AOTInductor, run from C++ (aoti_decoder_strategy.h).
// AOTInductor lowers each torch.cond to a read of its predicate on the host and a C++ if: one host
// decision per exit reached, as the host's if takes.
#include "decoder/aoti/aoti_decoder_strategy.h"

namespace condbench {
namespace {

class DecodeAotiCond final : public AotiDecoderStrategy {
 public:
  static constexpr bool kHostDecides = true;

  explicit DecodeAotiCond(Device device) : AotiDecoderStrategy(device, "cond") {}
  static Unsupported supports(const DecoderConfig& config, Device device, int64_t batch) {
    return supported(config, device, batch, "cond", "torch.cond branches on one boolean");
  }

 protected:
  // The exit taken says what ran: its layers and heads, the rest projected.
  void do_read_device_counters(TokenCounters& counted) const override {
    const int exit = last_exit();
    counted = work(config().exit_layer(exit), exit);
    counted.host_syncs = std::min(exit, config().num_exits() - 1);
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeAotiCond, "cond", Engine::aoti, Device::cpu,
                            "the nested torch.cond step exported and compiled by AOTInductor (batch 1)");

}  // namespace condbench
