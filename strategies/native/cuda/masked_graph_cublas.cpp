// masked_graph_cublas (engine native, CUDA): the native kernels' reference. Every block and head
// for every row as a cuBLASLt matmul (bias and ReLU in its epilogue, FP32), the native begin,
// exit-test and finish kernels around them (a row takes its head's logits when it leaves), all
// captured into one graph and replayed as device_flag_graph is. At full depth both compute every
// Linear for every row, so device_flag_graph against this is the native GEMV and GEMM against
// cuBLAS with the control flow the same (docs/measured.md). cuBLAS cannot skip rows that left, so
// this strategy masks: its FLOPs are the whole model for every row whatever the exits.
#include <memory>
#include <vector>

#include "native/cuda/cublas_lt.h"
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class MaskedGraphCublas final : public GraphedNativeStrategy {
 public:
  using GraphedNativeStrategy::GraphedNativeStrategy;

 protected:
  void build() override {
    const InferenceState& st = state();
    const std::vector<DeviceLinear>& layers = model().host_table();
    lt_ = std::make_unique<CublasLt>();
    linears_.clear();
    for (int k = 0; k < 2 * blocks() + 1; ++k) {
      const bool block = k < blocks();
      const int x_stride = k == 0 ? st.input_pitch : st.hidden_pitch;
      linears_.push_back(std::make_unique<LtLinear>(*lt_, layers[k], st.batch, x_stride,
                                                    block ? st.hidden_pitch : st.num_classes, block));
    }
    // Once before the capture: cuBLASLt loads its kernels on first use, which a capture cannot hold.
    enqueue_layers(/*with_tests=*/false);
    CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
    CaptureScope capture(stream());
    capture_begin_kernel();
    enqueue_layers(/*with_tests=*/true);
    instantiate(capture.end());
  }

  // Every Linear for every row, whatever left.
  double executed_flops() const override {
    double flops = 0;
    for (const DeviceLinear& l : model().host_table()) flops += 2.0 * l.in * l.out;
    return flops * state().batch;
  }

 private:
  // Block s into hidden s % 2, head s into head_logits, and (with_tests) exit test s; then the
  // final head and the finish.
  void enqueue_layers(bool with_tests) {
    const InferenceState& st = state();
    for (int s = 0; s < blocks(); ++s) {
      float* h = st.hidden[s % 2];
      linears_[s]->run(*lt_, s == 0 ? st.staged_input : st.hidden[(s + 1) % 2], h, stream());
      linears_[blocks() + s]->run(*lt_, h, st.head_logits, stream());
      if (with_tests) launch_exit_test(st, table(), {s, nullptr}, kNoCondition, stream());
    }
    linears_[2 * blocks()]->run(*lt_, st.hidden[(blocks() - 1) % 2], st.head_logits, stream());
    if (with_tests) launch_finish(st, table(), stream());
  }

  std::unique_ptr<CublasLt> lt_;
  std::vector<std::unique_ptr<LtLinear>> linears_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(MaskedGraphCublas, "masked_graph_cublas", Engine::native, Device::cuda,
                            "every Linear for every row by cuBLASLt, the native exit tests, one graph: the reference");

}  // namespace condbench::cuda
