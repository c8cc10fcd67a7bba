// device_flag_graph (engine native, CUDA): device_flag's kernel sequence captured once into a CUDA
// graph and replayed: one launch per inference, however deep the model.
#include "native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class DeviceFlagGraph final : public NativeCudaStrategy {
 public:
  using NativeCudaStrategy::NativeCudaStrategy;

 protected:
  void build() override {
    CaptureScope capture(stream());
    launch_begin(state(), kNoCondition, stream());
    const cudaGraphNode_t begin = last_captured_node(stream());
    enqueue_all_stages();
    graph_.instantiate(capture.end(), begin, state(), kNoCondition);
  }

  int64_t enqueue() override {
    graph_.launch(state(), stream());
    return 1;
  }

 private:
  CapturedInference graph_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(DeviceFlagGraph, "device_flag_graph", Engine::native, Device::cuda);

}  // namespace condbench::cuda
