// fused (engine native, CPU): the floor. The whole early-exit forward as one loop nest over the
// shared math of exit_math.h, with no framework in the hot path. Rows go through the model stage
// by stage: each block runs for the rows still active, four at a time so that every weight loaded
// serves four rows; each row's exit test then decides whether it leaves, and the active list
// shrinks. Results go straight into the output buffers allocated in prepare().
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "condbench/exit_math.h"
#include "condbench/flops.h"
#include "condbench/strategy.h"

namespace condbench {
namespace {

// Eight floats as one value (GCC/Clang vector extension); aligned(4) makes loads from any float
// address legal. With -march=native the compiler picks the widest registers the CPU has.
typedef float Vec8f __attribute__((vector_size(32), aligned(4)));

// A Linear's weights repacked for batches: panel p holds outputs [8p, 8p + 8) for every i,
// contiguous ([p][i][8]), so one panel (in x 8 floats) is read front to back and stays in cache
// while every active row passes through it.
struct PanelLinear {
  int in = 0, out = 0, panels = 0;
  std::vector<float> panel;  // [panels][in][8]
  const float* bias = nullptr;

  explicit PanelLinear(const NativeLinear& l) : in(l.in), out(l.out), panels(l.pitch / 8), bias(l.bias.data()) {
    panel.resize(static_cast<size_t>(panels) * in * 8);
    for (int p = 0; p < panels; ++p)
      for (int i = 0; i < in; ++i)
        for (int j = 0; j < 8; ++j)
          panel[(static_cast<size_t>(p) * in + i) * 8 + j] = l.wt[static_cast<size_t>(i) * l.pitch + p * 8 + j];
  }
};

// Outputs of panel p for four rows at once: each 8-wide weight vector is loaded once and used
// for all four rows. Like math::linear_row, every output is the bias plus the sum over i in
// ascending order, so a row gets the same bits whether it runs alone or in a group. CPU-only: a
// schedule of the shared math, not new math.
void linear_rows4(const PanelLinear& l, int p, const float* const x[4], float* const y[4], bool relu) {
  const Vec8f b = *reinterpret_cast<const Vec8f*>(l.bias + 8 * p);
  Vec8f acc0 = b, acc1 = b, acc2 = b, acc3 = b;
  const float* w = l.panel.data() + static_cast<size_t>(p) * l.in * 8;
  const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
  for (int i = 0; i < l.in; ++i, w += 8) {
    const Vec8f wi = *reinterpret_cast<const Vec8f*>(w);
    acc0 += x0[i] * wi;
    acc1 += x1[i] * wi;
    acc2 += x2[i] * wi;
    acc3 += x3[i] * wi;
  }
  const Vec8f acc[4] = {acc0, acc1, acc2, acc3};
  const int valid = std::min(8, l.out - 8 * p);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < valid; ++j) y[r][8 * p + j] = relu && acc[r][j] < 0.0f ? 0.0f : acc[r][j];
}

class FusedCpu final : public Strategy {
 public:
  using Strategy::Strategy;

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    native_ = model->native();
    panel_blocks_.clear();
    if (batch > 1)
      for (const NativeLinear& block : native_.blocks) panel_blocks_.emplace_back(block);
    const ModelConfig& config = native_.config;
    exit_id_ = at::empty({batch}, at::kInt);
    logits_ = at::empty({batch, config.num_classes}, at::kFloat);
    hidden_[0].assign(static_cast<size_t>(batch) * config.hidden, 0.0f);
    hidden_[1].assign(static_cast<size_t>(batch) * config.hidden, 0.0f);
    active_.reserve(batch);  // run() resizes within this capacity: no allocation while timed
    rows_in_.resize(batch);
    scratch_.assign(config.hidden, 0.0f);
    stage_flops_.clear();
    for (int k = 0; k < config.blocks; ++k) stage_flops_.push_back(block_flops(config, k) + head_flops(config));
  }

 protected:
  ExitOutput do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const ModelConfig& config = native_.config;
    const int64_t batch = input.size(0);
    const float* x = input.data_ptr<float>();
    int32_t* exit_id = exit_id_.data_ptr<int32_t>();
    float* logits = logits_.data_ptr<float>();

    active_.resize(batch);
    std::iota(active_.begin(), active_.end(), 0);
    for (int64_t r = 0; r < batch; ++r) rows_in_[r] = x + r * config.in_features;
    double flops = 0.0;
    int buffer = 0;
    for (int k = 0; k < config.blocks && !active_.empty(); ++k) {
      float* h = hidden_[buffer].data();
      run_block(k, h);
      flops += static_cast<double>(active_.size()) * stage_flops_[k];
      const NativeLinear& head = native_.heads[k];
      size_t kept = 0;
      for (const int64_t r : active_) {
        float* out = logits + r * config.num_classes;
        const float* row = h + r * config.hidden;
        math::linear_row(head.wt.data(), head.bias.data(), row, head.in, head.out, head.pitch, out, false);
        if (math::exit_fires(math::max_softmax(out, config.num_classes), thresholds[k])) {
          exit_id[r] = k + 1;
        } else {
          active_[kept++] = r;
          rows_in_[r] = row;  // the next block reads this row's activations
        }
      }
      active_.resize(kept);
      buffer ^= 1;
    }
    const NativeLinear& final_head = native_.heads[config.blocks];
    for (const int64_t r : active_) {
      math::linear_row(final_head.wt.data(), final_head.bias.data(), rows_in_[r], final_head.in, final_head.out,
                       final_head.pitch, logits + r * config.num_classes, false);
      exit_id[r] = config.final_exit();
    }
    flops += static_cast<double>(active_.size()) * head_flops(config);
    record().flops_executed = flops;
    return {exit_id_, logits_};
  }

 private:
  // Block k for every active row: rows_in_[r] -> h + r * hidden. One row alone runs in 32-wide
  // tiles. Otherwise the loop over weight panels is outermost, so each panel stays in cache while
  // every active row passes through it, four at a time: the weights stream from memory once per
  // inference, not once per row group. A last group short of four is padded with its own last
  // row, writing into a scratch row.
  void run_block(int k, float* h) {
    const NativeLinear& block = native_.blocks[k];
    const int hidden = native_.config.hidden;
    if (active_.size() == 1) {
      math::linear_row(block.wt.data(), block.bias.data(), rows_in_[active_[0]], block.in, block.out, block.pitch,
                       h + active_[0] * hidden, true);
      return;
    }
    const PanelLinear& panels = panel_blocks_[k];
    for (int p = 0; p < panels.panels; ++p)
      for (size_t a = 0; a < active_.size(); a += 4) {
        const float* in[4];
        float* out[4];
        for (size_t j = 0; j < 4; ++j) {
          const bool real = a + j < active_.size();
          const int64_t r = active_[real ? a + j : active_.size() - 1];
          in[j] = rows_in_[r];
          out[j] = real ? h + r * hidden : scratch_.data();
        }
        linear_rows4(panels, p, in, out, true);
      }
  }

  NativeModel native_;
  std::vector<PanelLinear> panel_blocks_;  // the blocks repacked for batches > 1
  std::vector<double> stage_flops_;
  std::vector<float> hidden_[2];       // [batch][hidden] activations, ping-pong between blocks
  std::vector<int64_t> active_;        // rows still running
  std::vector<const float*> rows_in_;  // each row's input to the next block
  std::vector<float> scratch_;         // where padding rows of a short group write
  at::Tensor exit_id_, logits_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu);

}  // namespace condbench
