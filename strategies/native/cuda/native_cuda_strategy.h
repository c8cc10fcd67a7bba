#pragma once
// What the native CUDA strategies share: the model's weights on the device, the buffers of one
// inference, the strategy's own stream, thresholds uploaded only when they change, and the
// executed-FLOP counter that the kernels keep on the device. A strategy says how an inference is
// enqueued (enqueue) and, if it uses graphs, builds them once in build().
#include <ATen/ATen.h>

#include <memory>
#include <optional>

#include "condbench/cuda/device_model.h"
#include "condbench/cuda/early_exit_kernels.h"
#include "condbench/cuda/resources.h"
#include "condbench/strategy.h"

namespace condbench::cuda {

class NativeCudaStrategy : public Strategy {
 public:
  using Strategy::Strategy;
  static Unsupported supports(const ModelConfig& config, Device /*device*/, int64_t /*batch*/) {
    return mlp_only(config);
  }

  void prepare(const EarlyExitModel& model, int64_t batch) final;
  void finish() final;
  std::optional<void*> cuda_stream() const final { return stream_.get(); }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) final;
  // No host decision ever; FLOPs from the kernels' own device counter (executed_flops).
  void do_read_device_counters(const ExitOutput& output, InferenceCounters& record) const final;

  // Called once at the end of prepare(): capture graphs here.
  virtual void build() {}
  // Enqueues one inference of state().input on stream(); returns the launches it issued (each
  // launch site counts its own: a kernel, or a graph).
  virtual int64_t enqueue() = 0;

  const InferenceState& state() const { return state_; }
  const DeviceLinear* table() const { return model_->table(); }
  const DeviceModel& model() const { return *model_; }
  int multiprocessors() const { return multiprocessors_; }
  cudaStream_t stream() const { return stream_.get(); }
  int blocks() const { return state_.blocks; }

  // FLOPs of the last inference; by default the kernels' own device counter.
  virtual double executed_flops() const;
  // The blocks and heads the last inference ran (blocks_run, heads_run); by default the device
  // counters the exit-test and finish kernels keep.
  virtual void read_stage_counts(InferenceCounters& record) const;
  const at::Tensor& exit_ids() const { return exit_id_; }

  // Every stage after begin, without conditionals: what device_flag launches and
  // device_flag_graph captures. Returns the kernels it launched, counted as it launches them.
  int64_t enqueue_all_stages();

 private:
  Stream stream_;
  std::unique_ptr<DeviceModel> model_;
  DeviceBuffer<float> staged_input_, hidden_[2], head_logits_, thresholds_, split_partials_;
  DeviceBuffer<int> active_, counts_, split_arrivals_;  // counts_: active_count, stage, blocks_run, heads_run
  DeviceBuffer<double> flops_;
  PinnedBuffer<float> threshold_upload_;
  std::vector<float> uploaded_thresholds_;
  at::Tensor exit_id_, logits_;
  InferenceState state_{};
  int multiprocessors_ = 0;
};

// A captured inference: the graph, its executable and the begin kernel's node. The graph reads
// its input through the begin kernel's argument, which launch() repoints with a kernel-node
// parameter update when the caller passes a different input (no recapture, no extra copy).
class CapturedInference {
 public:
  CapturedInference() = default;
  CapturedInference(const CapturedInference&) = delete;  // begin_.args point into begin_ itself
  CapturedInference& operator=(const CapturedInference&) = delete;

  void instantiate(cudaGraph_t graph, cudaGraphNode_t begin_node, const InferenceState& state, ConditionSink loop);
  void launch(const InferenceState& state, cudaStream_t stream);

 private:
  Graph graph_;
  GraphExec exec_;
  cudaGraphNode_t begin_node_ = nullptr;
  BeginNodeParams begin_{};
};

}  // namespace condbench::cuda

namespace condbench::cuda {

// A native strategy that replays one captured graph per inference: one launch. build() captures
// on stream(): capture_begin_kernel() first, then the stages, then instantiate().
class GraphedNativeStrategy : public NativeCudaStrategy {
 public:
  static constexpr bool kSingleLaunch = true;
  using NativeCudaStrategy::NativeCudaStrategy;

 protected:
  int64_t enqueue() final {
    graph_.launch(state(), stream());
    return 1;
  }
  // The begin kernel, whose node launch() repoints at each new input; `loop` is the WHILE handle
  // it sets, if any.
  void capture_begin_kernel(ConditionSink loop = kNoCondition) {
    launch_begin(state(), loop, stream());
    begin_node_ = last_captured_node(stream());
    loop_ = loop;
  }
  void instantiate(cudaGraph_t graph) { graph_.instantiate(graph, begin_node_, state(), loop_); }

 private:
  CapturedInference graph_;
  cudaGraphNode_t begin_node_ = nullptr;
  ConditionSink loop_ = kNoCondition;
};

}  // namespace condbench::cuda
