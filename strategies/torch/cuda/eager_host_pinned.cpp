// eager_host_pinned (engine torch, CUDA): eager_host with each exit test read into pinned host
// memory by an asynchronous copy and an event sync, instead of .item()'s pageable copy. Whether
// that helps is what the benchmark shows.
#include "torch/eager_host.h"

namespace condbench {
namespace {

class EagerHostPinned final : public EagerHost {
 public:
  explicit EagerHostPinned(Device device) : EagerHost(device, ExitTestReader::Mode::pinned_event) {}
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(EagerHostPinned, "eager_host_pinned", Engine::torch, Device::cuda,
                            "eager_host reading each exit test into pinned memory: async copy, event sync");

}  // namespace condbench
