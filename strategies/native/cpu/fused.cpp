// fused (engine native, CPU): the floor. The whole early-exit forward as one loop nest, with no
// framework in the hot path. Rows go through the model stage by stage: block k runs for the rows
// still active, then exit head k for the same rows, then each row's exit test (in vectors:
// vector_confidence.h) decides whether it leaves, and the active list shrinks. Every Linear is a
// PanelLinear (panel_linear.h): its weights are read once per inference, front to back, however
// many rows are active, and each loaded weight serves up to six rows. Exit ids go straight into the
// output buffers made in prepare(), logits when their row leaves (from the heads' padded rows);
// nothing is allocated while timed.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstring>

#include "condbench/exit_math.h"
#include "condbench/flops.h"
#include "condbench/strategy.h"
#include "native/cpu/panel_linear.h"
#include "native/cpu/vector_confidence.h"

namespace condbench {
namespace {

using Linear = cpu::PanelLinear<simd::kLanes>;

// A Linear is split across LibTorch's intra-op threads (the ones --threads sets), in disjoint
// panel ranges, when its multiply-adds over the active rows reach this; below it, waking a thread
// costs more than it saves. Measured on the reference machine (docs/measured.md, "Floors"): with every Linear
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
    in_features_ = config_.size("in_features");
    final_head_flops_ = head_flops(config_, config_.blocks);
    final_head_bytes_ = head_bytes(config_, config_.blocks);
    threads_ = at::get_num_threads();
    blocks_.clear();
    heads_.clear();
    for (const NativeLinear& block : native.blocks) blocks_.emplace_back(block);
    for (const NativeLinear& head : native.heads) heads_.emplace_back(head);
    output() = {at::empty({batch}, at::kInt), at::empty({batch, config_.num_classes}, at::kFloat)};
    exit_ids_out_ = output().exit_id.data_ptr<int32_t>();
    logits_out_ = output().logits.data_ptr<float>();
    // Every Linear stores whole vectors into rows padded to whole panels (the buffers 64-byte
    // aligned by LibTorch's CPU allocator, the rows as their pitch allows), so the next read of a
    // row, a vector one in the exit test, takes its value straight from the store. Rows of activations a little more
    // than that apart: at a power-of-two width, rows exactly 4 KiB apart would put the six rows a kernel reads (and
    // writes) in one set.
    row_pitch_ = static_cast<size_t>(blocks_[0].padded_out()) + 16;
    for (int i = 0; i < 2; ++i) {
      hidden_[i] = at::zeros({batch, static_cast<int64_t>(row_pitch_)}, at::kFloat);
      hidden_data_[i] = hidden_[i].data_ptr<float>();
    }
    // The exit heads' logits, before each row's exit test copies those of the rows that leave.
    logit_pitch_ = static_cast<size_t>(heads_[0].padded_out());
    head_logits_ = at::zeros({batch, static_cast<int64_t>(logit_pitch_)}, at::kFloat);
    head_logits_data_ = head_logits_.data_ptr<float>();
    rows_.assign(batch, 0);
    in_.assign(batch, nullptr);
    out_.assign(batch, nullptr);
    logit_rows_.assign(batch, nullptr);
    stage_flops_.clear();
    stage_bytes_.clear();
    for (int k = 0; k < config_.blocks; ++k) {
      stage_flops_.push_back(block_flops(config_, k) + head_flops(config_, k));
      stage_bytes_.push_back(block_bytes(config_, k) + head_bytes(config_, k));
    }
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const int classes = config_.num_classes;
    const size_t batch = static_cast<size_t>(input.size(0));
    const float* x = input.data_ptr<float>();
    int32_t* exit_id = exit_ids_out_;
    float* logits = logits_out_;

    // Active row a is row rows_[a]; in_[a] is its input to the next block, logit_rows_[a] where
    // the heads write its logits.
    size_t active = batch;
    for (size_t r = 0; r < batch; ++r) {
      rows_[r] = r;
      in_[r] = x + r * in_features_;
      logit_rows_[r] = head_logits_data_ + r * logit_pitch_;
    }
    double flops = 0.0, bytes = static_cast<double>(input.numel()) * sizeof(float);
    for (int k = 0; k < config_.blocks && active > 0; ++k) {
      float* h = hidden_data_[k % 2];
      for (size_t a = 0; a < active; ++a) out_[a] = h + rows_[a] * row_pitch_;
      linear(blocks_[k], in_.data(), out_.data(), active, true);
      linear(heads_[k], out_.data(), logit_rows_.data(), active, false);
      flops += static_cast<double>(active) * stage_flops_[k];
      bytes += stage_bytes_[k];
      size_t kept = 0;
      for (size_t a = 0; a < active; ++a) {
        if (math::exit_fires(cpu::max_softmax<simd::kLanes>(logit_rows_[a], classes), thresholds[k])) {
          exit_id[rows_[a]] = k + 1;
          std::memcpy(logits + rows_[a] * classes, logit_rows_[a], classes * sizeof(float));
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
      for (size_t a = 0; a < active; ++a) {
        exit_id[rows_[a]] = config_.final_exit();
        std::memcpy(logits + rows_[a] * classes, logit_rows_[a], classes * sizeof(float));
      }
      flops += static_cast<double>(active) * final_head_flops_;
      bytes += final_head_bytes_;
    }
    record().flops_executed = flops;
    record().bytes_read = bytes;
    return output();
  }

 private:
  // Rows' outputs padded to whole panels (prepare() makes every row so).
  void linear(const Linear& l, const float* const* x, float* const* y, size_t rows, bool relu) const {
    if (threads_ > 1 && static_cast<double>(rows) * l.in() * l.out() >= kParallelMultiplyAdds) {
      at::parallel_for(0, l.panels(), 1, [&](int64_t begin, int64_t end) {
        l.forward_panels(static_cast<int>(begin), static_cast<int>(end), x, y, rows, relu, /*padded=*/true);
      });
    } else {
      l.forward(x, y, rows, relu, /*padded=*/true);
    }
  }

  ModelConfig config_;
  int in_features_ = 0;
  double final_head_flops_ = 0, final_head_bytes_ = 0;  // per row; per inference
  int threads_ = 1;                                     // LibTorch's intra-op threads when prepared
  size_t row_pitch_ = 0;                                // floats between two rows' activations
  size_t logit_pitch_ = 0;                              // floats between two rows' head logits
  std::vector<Linear> blocks_, heads_;                  // heads_[k] is exit k+1; heads_[blocks] is the final head
  std::vector<double> stage_flops_;                     // block k and exit head k, per row
  std::vector<double> stage_bytes_;                     // their weights and biases
  at::Tensor hidden_[2];                                // [batch][row_pitch_] activations, ping-pong between blocks
  at::Tensor head_logits_;                              // [batch][logit_pitch_]: each row's logits at the last head
  std::vector<size_t> rows_;                            // the active rows
  std::vector<const float*> in_;                        // each active row's input to the next block
  std::vector<float*> out_;                             // each active row's output of the current block
  std::vector<float*> logit_rows_;                      // each active row's head logits
  // The data of output(), hidden_ and head_logits_, looked up once in prepare().
  int32_t* exit_ids_out_ = nullptr;
  float* logits_out_ = nullptr;
  float* hidden_data_[2] = {nullptr, nullptr};
  float* head_logits_data_ = nullptr;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu,
                            "the whole early-exit forward in one hand-written loop nest: the CPU floor");

}  // namespace condbench
