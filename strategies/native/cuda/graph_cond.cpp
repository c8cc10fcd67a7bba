// graph_cond (engine native, CUDA): one CUDA graph in which every stage after the first sits in
// an IF node nested in the previous one. The exit-test kernel of stage s sets the handle of the IF
// that guards stage s+1 to "some row is still active", so the GPU skips the rest of the model
// when every row has left, without the host ever looking. A 3-block model is three nested IFs;
// graph_while does the same with one WHILE node.
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class GraphCondNative final : public GraphedNativeStrategy {
 public:
  static constexpr bool kSkipsBlocksOnDevice = true;
  static constexpr bool kSkipsFinalHeadOnDevice = true;
  using GraphedNativeStrategy::GraphedNativeStrategy;

 protected:
  void build() override {
    CaptureScope capture(stream());
    capture_begin_kernel();
    capture_stage(0, stream());
    instantiate(capture.end());
  }

 private:
  // Stage s on the capturing stream `on`, then an IF on its exit test holding everything after
  // it. A body is captured on a stream of its own (one per nesting level), because `on` is still
  // capturing the enclosing graph.
  void capture_stage(int s, cudaStream_t on) {
    launch_block(state(), table(), {s, nullptr}, on);
    launch_head(state(), table(), {s, nullptr}, on);
    const cudaGraphConditionalHandle any_left = make_condition(on);
    launch_exit_test(state(), table(), {s, nullptr}, {any_left, 1, 0, 0}, on);
    const cudaGraph_t rest = add_conditional(on, any_left, cudaGraphCondTypeIf);

    while (static_cast<int>(levels_.size()) <= s) levels_.push_back(make_stream());
    const cudaStream_t inner = levels_[s].get();
    CaptureScope body(inner, rest);
    if (s + 1 < blocks()) {
      capture_stage(s + 1, inner);
    } else {
      launch_head(state(), table(), {blocks(), nullptr}, inner);
      launch_finish(state(), table(), inner);
    }
    body.end();
  }

  std::vector<Stream> levels_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(GraphCondNative, "graph_cond", Engine::native, Device::cuda,
                            "one graph of nested IF nodes; an exit-test kernel sets each node's handle");

}  // namespace condbench::cuda
