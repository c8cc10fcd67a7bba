#pragma once
// What the decoder's graph strategies with conditional nodes (graph_cond, graph_while) share: one
// decode step (conditional_step.h) captured once into a CUDA graph whose IF and WHILE nodes take
// the exit decisions on the device, replayed for every token over fixed-size caches and a
// device-side position, as masked_graph is. The decisions never reach the host: a step whose rows
// all leave early runs only their layers and the projections. The nodes are ConditionalGraph's:
// IF-ELSE and SWITCH (CUDA 12.8+) besides WHILE, which it builds with the CUDA runtime whatever
// LibTorch's own conditional capture offers (that has IF and WHILE only). What ran
// is counted on the device, inside the bodies, and read back only by the untimed passes. Each
// strategy says which step it captures and how deep its bodies nest.
#include <c10/cuda/CUDAGuard.h>

#include <functional>
#include <memory>
#include <vector>

#include "condbench/cuda/stuck_condition.h"
#include "condbench/torch_cuda.h"
#include "decoder/torch/conditional_step.h"
#include "decoder/torch/cuda/fixed_step_strategy.h"
#include "torch/cuda/conditional_graph.h"

namespace condbench {

class DeviceDecidedStrategy : public FixedStepStrategy {
 public:
  using FixedStepStrategy::FixedStepStrategy;
  static constexpr bool kSkipsOnDeviceWhenAllLeft = true;

 protected:
  // The step's branches (conditional_step.h): an IF-ELSE, a SWITCH and a WHILE, `depth` deep.
  using Body = std::function<void()>;
  using Either = std::function<void(const at::Tensor& predicate, int depth, const Body& then, const Body& otherwise)>;
  using Pick = std::function<void(const at::Tensor& index, int depth, int cases, const std::function<void(int)>& body)>;
  using Loop = std::function<void(const at::Tensor& predicate, int depth, const Body& body)>;
  struct Branches {
    Either either;
    Pick pick;
    Loop loop;
  };
  using Parts = StepParts<std::function<at::Tensor(int, const at::Tensor&)>,
                          std::function<void(int, const at::Tensor&)>, std::function<at::Tensor(int)>>;

  // The deepest a body of this strategy's step nests.
  virtual int nesting(const DecoderConfig& c) const = 0;
  // The step on the fixed tensors, its branches through `branches`.
  virtual void decode(const at::Tensor& h, const Parts& parts, const Branches& branches) = 0;

  ConditionalStepState state_;

 private:
  void do_prepare(const DecoderModel& model, int64_t batch) final {
    const DecoderConfig& c = model.config;
    allocate_fixed(model, batch);
    state_.allocate(c, batch, at::Device(at::kCUDA, 0));
    const at::cuda::CUDAStream side = capture_stream();
    graph_ = std::make_unique<ConditionalGraph>(nesting(c), ConditionalGraph::Nodes::any);
    // Every body on every stream one is captured on, eagerly, before the capture (cuBLAS's handles
    // and workspaces must exist before it): each branch runs once, whatever its predicate.
    const Branches once{
        [](const at::Tensor& /*predicate*/, int /*depth*/, const Body& then, const Body& otherwise) {
          then();
          otherwise();
        },
        [](const at::Tensor& /*index*/, int /*depth*/, int cases, const std::function<void(int)>& body) {
          for (int i = 0; i < cases; ++i) body(i);
        },
        [](const at::Tensor& /*predicate*/, int /*depth*/, const Body& body) { body(); }};
    for (const at::cuda::CUDAStream& stream : graph_->streams(side)) {
      const c10::cuda::CUDAStreamGuard on(stream);
      step(once);
      stream.synchronize();
    }
    graph_->capture(side, [&] {
      step({[&](const at::Tensor& predicate, int depth, const Body& then, const Body& otherwise) {
              // A fault the tests inject (cuda::testing::StuckCondition): the IF-ELSE after exit
              // test `level` held on its first branch, which then runs a segment for nothing.
              const bool stuck = depth - 1 == cuda::testing::stuck_condition_level();
              graph_->if_else(stuck ? at::ones_like(predicate) : predicate, depth, then, otherwise);
            },
            [&](const at::Tensor& index, int depth, int cases, const std::function<void(int)>& body) {
              std::vector<Body> bodies;
              for (int i = 0; i < cases; ++i) bodies.emplace_back([&body, i] { body(i); });
              graph_->switch_on(index, depth, bodies);
            },
            [&](const at::Tensor& predicate, int depth, const Body& body) {
              const std::unique_ptr<ConditionalGraph::Body> node = graph_->open_while(predicate, depth);
              body();
              node->end();
            }});
    });
    side.synchronize();
    output_ = {input_, state_.exit_id, state_.logits};
  }

  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) final {
    set_step(input, thresholds, position);
    graph_->launch();
    record().launches += 1;  // the launch; the copies before it are ATen calls, counted as such
    return output_;
  }

  // Layers and heads as the bodies counted them, for every row of the batch; the layers not run
  // only projected keys and values. Attention reads the whole cache, masked, as in masked_graph.
  void do_read_device_counters(TokenCounters& counted) const final {
    const at::Tensor ran = state_.ran.to(at::kCPU);
    count_step_work(counted, config(), static_cast<double>(batch_), ran[0].item<int>(), ran[1].item<int>(),
                    config().context - 1);
  }

  // One step: its tokens go into input_, which the next replay reads unless the caller gives
  // another input.
  void step(const Branches& branches) {
    const at::Tensor visible = decoder_->visible_through(position_);
    const Parts parts{[&](int l, const at::Tensor& h) { return layer(l, h, visible); },
                      [&](int l, const at::Tensor& h) { decoder_->propagate_at(l, h, cache_, position_); },
                      [&](int exit) { return thresholds_.at(exit - 1); }};
    decode(decoder_->embed_at(input_, position_), parts, branches);
    input_.copy_(state_.logits.argmax(-1));
  }

  std::unique_ptr<ConditionalGraph> graph_;
  TokenOutput output_;
};

}  // namespace condbench
