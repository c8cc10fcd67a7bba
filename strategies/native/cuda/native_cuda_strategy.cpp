#include "native/cuda/native_cuda_strategy.h"

#include <algorithm>

#include "condbench/cuda/check.h"
#include "condbench/error.h"

namespace condbench::cuda {

void NativeCudaStrategy::prepare(const EarlyExitModel& model, int64_t batch) {
  const ModelConfig& config = model->config();
  stream_ = make_stream();
  model_ = std::make_unique<DeviceModel>(model->native(), stream_.get());
  const int in_features = config.size("in_features"), hidden = config.size("hidden");
  int device = 0, multiprocessors = 0;
  CONDBENCH_CUDA_CHECK(cudaGetDevice(&device));
  CONDBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const int rows = static_cast<int>(batch);
  // One plan for the blocks (the widest input of any: block 0 reads in_features), one for the heads.
  const LinearPlan block_plan = plan_linear(rows, std::max(in_features, hidden), hidden, multiprocessors);
  const LinearPlan head_plan = plan_linear(rows, hidden, config.num_classes, multiprocessors);
  const int input_pitch = vector_padded(in_features), hidden_pitch = vector_padded(hidden);

  // Zeroed once: the rows' padding is never written, and the kernels read it as part of a float4.
  const auto zeroed = [this](size_t count) {
    DeviceBuffer<float> buffer(count);
    CONDBENCH_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, count * sizeof(float), stream_.get()));
    return buffer;
  };
  staged_input_ = zeroed(static_cast<size_t>(batch) * input_pitch);
  hidden_[0] = zeroed(static_cast<size_t>(batch) * hidden_pitch);
  hidden_[1] = zeroed(static_cast<size_t>(batch) * hidden_pitch);
  head_logits_ = zeroed(static_cast<size_t>(batch) * config.num_classes);
  split_partials_ =
      DeviceBuffer<float>(std::max(split_workspace_floats(block_plan), split_workspace_floats(head_plan)));
  split_arrivals_ = DeviceBuffer<int>(std::max(split_counters(block_plan), split_counters(head_plan)));
  if (split_arrivals_.size() > 0)  // every count starts at 0; the last part of each tile resets its own
    CONDBENCH_CUDA_CHECK(
        cudaMemsetAsync(split_arrivals_.get(), 0, split_arrivals_.size() * sizeof(int), stream_.get()));
  thresholds_ = DeviceBuffer<float>(config.blocks);
  threshold_upload_ = PinnedBuffer<float>(config.blocks);
  uploaded_thresholds_.clear();
  active_ = DeviceBuffer<int>(batch);
  counts_ = DeviceBuffer<int>(4);
  flops_ = DeviceBuffer<double>(1);
  const auto options = at::TensorOptions().device(at::kCUDA, 0);
  exit_id_ = at::empty({batch}, options.dtype(at::kInt));
  logits_ = at::empty({batch, config.num_classes}, options.dtype(at::kFloat));
  output() = {exit_id_, logits_};

  state_ = {};
  state_.input = staged_input_.get();  // until run() names the caller's input
  state_.staged_input = staged_input_.get();
  state_.hidden[0] = hidden_[0].get();
  state_.hidden[1] = hidden_[1].get();
  state_.head_logits = head_logits_.get();
  state_.logits = logits_.data_ptr<float>();
  state_.exit_id = exit_id_.data_ptr<int>();
  state_.active = active_.get();
  state_.active_count = counts_.get();
  state_.stage = counts_.get() + 1;
  state_.blocks_run = counts_.get() + 2;
  state_.heads_run = counts_.get() + 3;
  state_.flops = flops_.get();
  state_.thresholds = thresholds_.get();
  state_.split_partials = split_partials_.get();
  state_.split_arrivals = split_arrivals_.get();
  state_.batch = rows;
  state_.blocks = config.blocks;
  state_.in_features = in_features;
  state_.hidden_size = hidden;
  state_.num_classes = config.num_classes;
  state_.input_pitch = input_pitch;
  state_.hidden_pitch = hidden_pitch;
  state_.block_plan = block_plan;
  state_.head_plan = head_plan;
  multiprocessors_ = multiprocessors;
  // at::empty may have run on torch's stream: make the buffers' allocation visible to ours.
  CONDBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  build();
  CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

const ExitOutput& NativeCudaStrategy::do_run(const at::Tensor& input, const std::vector<float>& thresholds) {
  if (thresholds != uploaded_thresholds_) {  // a benchmark keeps its thresholds: no copy while timed
    // The pinned staging buffer may still feed the previous upload: let it finish first.
    CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    std::copy(thresholds.begin(), thresholds.end(), threshold_upload_.get());
    CONDBENCH_CUDA_CHECK(cudaMemcpyAsync(thresholds_.get(), threshold_upload_.get(), thresholds.size() * sizeof(float),
                                         cudaMemcpyHostToDevice, stream_.get()));
    uploaded_thresholds_ = thresholds;
  }
  state_.input = input.data_ptr<float>();
  record().launches = static_cast<double>(enqueue());
  return output();
}

void NativeCudaStrategy::finish() { CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

double NativeCudaStrategy::executed_flops() const {
  double flops = 0.0;
  CONDBENCH_CUDA_CHECK(cudaMemcpy(&flops, flops_.get(), sizeof(double), cudaMemcpyDeviceToHost));
  return flops;
}

void NativeCudaStrategy::read_stage_counts(InferenceCounters& record) const {
  int counts[2] = {0, 0};  // blocks_run, heads_run: adjacent in counts_ (prepare)
  CONDBENCH_CUDA_CHECK(cudaMemcpy(counts, state_.blocks_run, sizeof(counts), cudaMemcpyDeviceToHost));
  record.blocks_run = counts[0];
  record.heads_run = counts[1];
}

void NativeCudaStrategy::do_read_device_counters(const ExitOutput& /*output*/, InferenceCounters& record) const {
  CONDBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  record.flops_executed = executed_flops();
  read_stage_counts(record);
}

int64_t NativeCudaStrategy::enqueue_all_stages() {
  int64_t launches = 0;
  for (int s = 0; s < blocks(); ++s) {
    launch_block(state_, table(), {s, nullptr}, stream());
    launch_head(state_, table(), {s, nullptr}, stream());
    launch_exit_test(state_, table(), {s, nullptr}, kNoCondition, stream());
    launches += 3;
  }
  launch_head(state_, table(), {blocks(), nullptr}, stream());
  launch_finish(state_, table(), stream());
  return launches + 2;
}

void CapturedInference::instantiate(cudaGraph_t graph, cudaGraphNode_t begin_node, const InferenceState& state,
                                    ConditionSink loop) {
  graph_ = Graph(graph);
  exec_ = cuda::instantiate(graph_);
  begin_node_ = begin_node;
  make_begin_params(begin_, state, loop);
}

void CapturedInference::launch(const InferenceState& state, cudaStream_t stream) {
  if (state.input != begin_.state.input) {
    begin_.state.input = state.input;
    CONDBENCH_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec_.get(), begin_node_, &begin_.params));
  }
  CONDBENCH_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream));
}

}  // namespace condbench::cuda
