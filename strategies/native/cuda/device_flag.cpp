// device_flag (engine native, CUDA): every stage's kernels are launched; each reads the on-device
// active mask and skips rows already exited, and block and head kernels return at once when no
// row is left. The host never waits: the decision stays on the device, the launches do not.
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class DeviceFlag final : public NativeCudaStrategy {
 public:
  using NativeCudaStrategy::NativeCudaStrategy;

 protected:
  int64_t enqueue() override {
    launch_begin(state(), kNoCondition, stream());
    return 1 + enqueue_all_stages();
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DeviceFlag, "device_flag", Engine::native, Device::cuda,
                            "launches every stage; kernels skip rows whose on-device active flag is cleared");

}  // namespace condbench::cuda
