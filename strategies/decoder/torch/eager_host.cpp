// eager_host (decoder, engine torch): the decode loop as it is usually written. After each exit
// layer the host reads the exit test of the rows still running and decides: the rows that fire
// take that exit's argmax as their token and leave; the others go on, compacted. A row that left
// is carried to the last layer by its keys and values only: each deeper layer projects them from
// its state at the exit (propagate), so the next tokens find a whole cache.
#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "condbench/decoder/torch_decoder.h"
#include "condbench/torch_device.h"

namespace condbench {
namespace {

class DecodeEagerHost final : public DecoderStrategy {
 public:
  using DecoderStrategy::DecoderStrategy;
  static constexpr bool kHostDecides = true;

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override {
    decoder_ = std::make_unique<TorchDecoder>(model, torch_device(device()));
    cache_ = decoder_->make_cache(batch);
    const auto on_device = at::TensorOptions().device(torch_device(device()));
    output_ = {at::empty({batch}, on_device.dtype(at::kLong)), at::empty({batch}, on_device.dtype(at::kInt)),
               at::empty({batch, model.config.vocab}, on_device.dtype(at::kFloat))};
  }

  void do_start(const at::Tensor& prompt) override {
    decoder_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
  }

  const DecodeOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override {
    const DecoderConfig& c = config();
    DecodeCounters& counters = record();
    at::Tensor h = decoder_->embed(input, position);
    at::Tensor rows;               // batch indices of the running rows; undefined while every row runs
    at::Tensor left_h, left_rows;  // the rows that left: their states at the exit, their batch indices
    int64_t active = input.size(0), left = 0;
    int exit = 1;
    // An LM head evaluation for `n` rows: its weights count once per step, as every Linear's do.
    auto count_head = [&, head_read = false](int64_t n) mutable {
      counters.heads_run += static_cast<double>(n);
      counters.flops_executed += static_cast<double>(n) * decoder_head_flops(c);
      if (!std::exchange(head_read, true)) counters.bytes_read += decoder_head_bytes(c);
    };
    for (int l = 0; l < c.layers; ++l) {
      if (left > 0) {
        decoder_->propagate(l, left_h, cache_, left_rows, position);
        counters.layers_propagated += static_cast<double>(left);
        counters.flops_executed += static_cast<double>(left) * decoder_propagation_flops(c);
        if (active == 0) counters.bytes_read += decoder_propagation_bytes(c);
      }
      if (active == 0) continue;
      h = decoder_->layer(l, h, cache_, rows, position);
      counters.layers_run += static_cast<double>(active);
      counters.flops_executed += static_cast<double>(active) * decoder_layer_flops(c, position);
      counters.bytes_read +=
          decoder_layer_bytes(c) + static_cast<double>(active) * decoder_cache_read_bytes(c, position);
      if (exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;

      const at::Tensor logits = decoder_->logits(h);
      count_head(active);
      // The host decision: one read of the running rows' exit test.
      const at::Tensor fire = TorchDecoder::exit_test(logits, thresholds[exit - 1]).to(at::kCPU);
      ++counters.host_syncs;
      const bool* fires = fire.data_ptr<bool>();
      const int64_t fired = std::count(fires, fires + active, true);
      if (fired > 0) {
        at::Tensor leave = at::empty({fired}, at::kLong), stay = at::empty({active - fired}, at::kLong);
        int64_t* leave_at = leave.data_ptr<int64_t>();
        int64_t* stay_at = stay.data_ptr<int64_t>();
        for (int64_t r = 0; r < active; ++r) *(fires[r] ? leave_at++ : stay_at++) = r;
        leave = leave.to(h.device());
        stay = stay.to(h.device());
        const at::Tensor leaving_rows = rows.defined() ? rows.index_select(0, leave) : leave;
        write_rows(leaving_rows, logits.index_select(0, leave), exit);
        const at::Tensor leaving_h = h.index_select(0, leave);
        left_h = left > 0 ? at::cat({left_h, leaving_h}) : leaving_h;
        left_rows = left > 0 ? at::cat({left_rows, leaving_rows}) : leaving_rows;
        left += fired;
        active -= fired;
        if (active > 0) {
          h = h.index_select(0, stay);
          rows = rows.defined() ? rows.index_select(0, stay) : stay;
        }
      }
      ++exit;
    }
    if (active > 0) {
      write_rows(rows, decoder_->logits(h), c.final_exit());
      count_head(active);
    }
    return output_;
  }

 private:
  // `rows` of the batch (every row when undefined) take exit `exit` with these logits.
  void write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit) {
    const at::Tensor token = logits.argmax(-1);
    if (rows.defined()) {
      output_.logits.index_copy_(0, rows, logits);
      output_.token.index_copy_(0, rows, token);
      output_.exit_id.index_fill_(0, rows, exit);
    } else {
      output_.logits.copy_(logits);
      output_.token.copy_(token);
      output_.exit_id.fill_(exit);
    }
  }

  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  DecodeOutput output_;
};

}  // namespace

CONDBENCH_REGISTER_DECODER_STRATEGY(
    DecodeEagerHost, "eager_host", Engine::torch, Device::cpu,
    "the host reads each exit's test; running rows go on compacted, left ones propagate");

}  // namespace condbench
