// eager_host_pinned (decoder, engine torch, CUDA): eager_host reading each exit test into pinned
// host memory by an asynchronous copy and an event wait, instead of a blocking pageable copy.
#include "decoder/torch/eager_host.h"

namespace condbench {
namespace {

class DecodeEagerHostPinned final : public DecodeEagerHost {
 public:
  explicit DecodeEagerHostPinned(Device device) : DecodeEagerHost(device, ExitTestReader::Mode::pinned_event) {}
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DecodeEagerHostPinned, "eager_host_pinned", Engine::torch, Device::cuda,
                            "eager_host reading each exit test into pinned memory: async copy, event wait");

}  // namespace condbench
