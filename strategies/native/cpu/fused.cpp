// fused (engine native, CPU): the floor. The whole early-exit forward as one loop nest, with no
// framework in the hot path. Rows go through the model stage by stage: block k runs for the rows
// still active, then exit head k for the same rows, then each row's exit test decides whether it
// leaves, and the active list shrinks. Every Linear is a PanelLinear (panel_linear.h): its
// weights are read once per inference, front to back, however many rows are active, and each
// loaded weight serves up to six rows. Results go straight into the output buffers made in
// prepare(); nothing is allocated while timed.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "condbench/exit_math.h"
#include "condbench/flops.h"
#include "condbench/strategy.h"
#include "native/cpu/panel_linear.h"

namespace condbench {
namespace {

using Linear = cpu::PanelLinear<simd::kLanes>;

// A Linear is split across LibTorch's intra-op threads (the ones --threads sets), in disjoint
// panel ranges, when its multiply-adds over the active rows reach this; below it, waking a thread
// costs more than it saves. Measured on the reference machine (README, "Floors"): with every Linear
// split, two threads were slower up to 0.5 M multiply-adds per Linear and faster from 1 M.
constexpr double kParallelMultiplyAdds = 1 << 20;

class FusedCpu final : public Strategy {
 public:
  using Strategy::Strategy;
  static Unsupported supports(const ModelConfig& config, Device /*device*/, int64_t /*batch*/) {
    return mlp_only(config);
  }

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    const NativeModel native = model->native();
    config_ = native.config;
    threads_ = at::get_num_threads();
    blocks_.clear();
    heads_.clear();
    for (const NativeLinear& block : native.blocks) blocks_.emplace_back(block);
    for (const NativeLinear& head : native.heads) heads_.emplace_back(head);
    exit_id_ = at::empty({batch}, at::kInt);
    logits_ = at::empty({batch, config_.num_classes}, at::kFloat);
    // Rows of activations a little more than the width apart: at a power-of-two width, rows
    // exactly 4 KiB apart would put the six rows a kernel reads (and writes) in one cache set.
    row_pitch_ = config_.hidden + 16;
    hidden_[0].assign(static_cast<size_t>(batch) * row_pitch_, 0.0f);
    hidden_[1].assign(static_cast<size_t>(batch) * row_pitch_, 0.0f);
    rows_.assign(batch, 0);
    in_.assign(batch, nullptr);
    out_.assign(batch, nullptr);
    logit_rows_.assign(batch, nullptr);
    stage_flops_.clear();
    stage_bytes_.clear();
    for (int k = 0; k < config_.blocks; ++k) {
      stage_flops_.push_back(block_flops(config_, k) + head_flops(config_));
      stage_bytes_.push_back(block_bytes(config_, k) + head_bytes(config_));
    }
  }

 protected:
  ExitOutput do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const int classes = config_.num_classes;
    const size_t batch = static_cast<size_t>(input.size(0));
    const float* x = input.data_ptr<float>();
    int32_t* exit_id = exit_id_.data_ptr<int32_t>();
    float* logits = logits_.data_ptr<float>();

    // Active row a is row rows_[a]; in_[a] is its input to the next block.
    size_t active = batch;
    for (size_t r = 0; r < batch; ++r) {
      rows_[r] = r;
      in_[r] = x + r * config_.in_features;
      logit_rows_[r] = logits + r * classes;
    }
    double flops = 0.0, bytes = static_cast<double>(input.numel()) * sizeof(float);
    for (int k = 0; k < config_.blocks && active > 0; ++k) {
      float* h = hidden_[k % 2].data();
      for (size_t a = 0; a < active; ++a) out_[a] = h + rows_[a] * row_pitch_;
      linear(blocks_[k], in_.data(), out_.data(), active, true);
      linear(heads_[k], out_.data(), logit_rows_.data(), active, false);
      flops += static_cast<double>(active) * stage_flops_[k];
      bytes += stage_bytes_[k];
      size_t kept = 0;
      for (size_t a = 0; a < active; ++a) {
        if (math::exit_fires(math::max_softmax(logit_rows_[a], classes), thresholds[k])) {
          exit_id[rows_[a]] = k + 1;
        } else {
          rows_[kept] = rows_[a];
          in_[kept] = out_[a];
          logit_rows_[kept] = logit_rows_[a];
          ++kept;
        }
      }
      active = kept;
    }
    if (active > 0) {
      linear(heads_[config_.blocks], in_.data(), logit_rows_.data(), active, false);
      for (size_t a = 0; a < active; ++a) exit_id[rows_[a]] = config_.final_exit();
      flops += static_cast<double>(active) * head_flops(config_);
      bytes += head_bytes(config_);
    }
    record().flops_executed = flops;
    record().bytes_read = bytes;
    return {exit_id_, logits_};
  }

 private:
  void linear(const Linear& l, const float* const* x, float* const* y, size_t rows, bool relu) const {
    if (threads_ > 1 && static_cast<double>(rows) * l.in() * l.out() >= kParallelMultiplyAdds) {
      at::parallel_for(0, l.panels(), 1, [&](int64_t begin, int64_t end) {
        l.forward_panels(static_cast<int>(begin), static_cast<int>(end), x, y, rows, relu);
      });
    } else {
      l.forward(x, y, rows, relu);
    }
  }

  ModelConfig config_;
  int threads_ = 1;                     // LibTorch's intra-op threads when prepared
  size_t row_pitch_ = 0;                // floats between two rows' activations
  std::vector<Linear> blocks_, heads_;  // heads_[k] is exit k+1; heads_[blocks] is the final head
  std::vector<double> stage_flops_;     // block k and exit head k, per row
  std::vector<double> stage_bytes_;     // their weights and biases
  std::vector<float> hidden_[2];        // [batch][row_pitch_] activations, ping-pong between blocks
  std::vector<size_t> rows_;            // the active rows
  std::vector<const float*> in_;        // each active row's input to the next block
  std::vector<float*> out_;             // each active row's output of the current block
  std::vector<float*> logit_rows_;      // each active row's logits
  at::Tensor exit_id_, logits_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu,
                            "the whole early-exit forward in one hand-written loop nest: the CPU floor");

}  // namespace condbench
