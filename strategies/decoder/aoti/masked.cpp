// masked (decoder, engine aoti): the peer's masked decode step over the fixed-size cache (every
// layer and head, the state frozen with torch.where once the token left) exported and compiled by
// AOTInductor, run from C++ (aoti_decoder_strategy.h). No host decision.
#include "decoder/aoti/aoti_decoder_strategy.h"

namespace condbench {
namespace {

class DecodeAotiMasked final : public AotiDecoderStrategy {
 public:
  static constexpr bool kComputesEveryRow = true;

  explicit DecodeAotiMasked(Device device) : AotiDecoderStrategy(device, "masked") {}
  static Unsupported supports(const DecoderConfig& config, Device device, int64_t batch) {
    return supported(config, device, batch, "masked", "exported as cond's is, so the two do the same work");
  }

 protected:
  void do_read_device_counters(TokenCounters& counted) const override {
    counted = work(config().layers, config().num_exits());
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeAotiMasked, "masked", Engine::aoti, Device::cpu,
                            "the masked step exported and compiled by AOTInductor (batch 1)");

}  // namespace condbench
