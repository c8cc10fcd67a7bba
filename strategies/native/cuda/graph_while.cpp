// graph_while (engine native, CUDA): graph_cond's decision with one WHILE node. The body runs the
// stage named by a device-side counter (block, head, exit test); the exit test advances the
// counter and sets the loop's handle to "some row is active and a block is left". The graph has
// the same size whatever the depth: a 12-block model is one loop node, not a 12-deep nest.
#include "native/cuda/native_cuda_strategy.h"

namespace condbench::cuda {
namespace {

class GraphWhile final : public GraphedNativeStrategy {
 public:
  static constexpr bool kSkipsBlocksOnDevice = true;
  using GraphedNativeStrategy::GraphedNativeStrategy;

 protected:
  void build() override {
    CaptureScope capture(stream());
    const cudaGraphConditionalHandle loop = make_condition(stream());
    const ConditionSink keep_going{loop, 1, 1, 0};
    capture_begin_kernel(keep_going);  // sets the handle: the loop's first test
    const cudaGraph_t body = add_conditional(stream(), loop, cudaGraphCondTypeWhile);
    {
      body_stream_ = make_stream();
      CaptureScope inside(body_stream_.get(), body);
      const StageRef current{0, state().stage};
      launch_block(state(), table(), current, body_stream_.get());
      launch_head(state(), table(), current, body_stream_.get());
      launch_exit_test(state(), table(), current, keep_going, body_stream_.get());
      inside.end();
    }
    launch_head(state(), table(), {blocks(), nullptr}, stream());
    launch_finish(state(), table(), stream());
    instantiate(capture.end());
  }

 private:
  Stream body_stream_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(GraphWhile, "graph_while", Engine::native, Device::cuda,
                            "one WHILE node looping over the blocks; constant graph size at any depth");

}  // namespace condbench::cuda
