// device_flag_graph (engine native, CUDA): device_flag's kernel sequence captured once into a CUDA
// graph and replayed: one launch per inference, however deep the model.
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class DeviceFlagGraph final : public GraphedNativeStrategy {
 public:
  using GraphedNativeStrategy::GraphedNativeStrategy;

 protected:
  void build() override {
    CaptureScope capture(stream());
    capture_begin_kernel();
    enqueue_all_stages();
    instantiate(capture.end());
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DeviceFlagGraph, "device_flag_graph", Engine::native, Device::cuda,
                            "device_flag captured into one CUDA graph, replayed per inference");

}  // namespace condbench::cuda
