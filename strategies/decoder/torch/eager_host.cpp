// eager_host (decoder, engine torch): see eager_host.h.
#include "decoder/torch/eager_host.h"

#include <algorithm>
#include <utility>

namespace condbench {

void DecodeEagerHost::do_prepare(const DecoderModel& model, int64_t batch) {
  decoder_ = std::make_unique<TorchDecoder>(model, torch_device(device()));
  cache_ = decoder_->make_cache(batch);
  const auto on_device = at::TensorOptions().device(torch_device(device()));
  output_ = {at::empty({batch}, on_device.dtype(at::kLong)), at::empty({batch}, on_device.dtype(at::kInt)),
             at::empty({batch, model.config.vocab}, on_device.dtype(at::kFloat))};
  reader_.prepare(batch);
}

void DecodeEagerHost::do_start(const at::Tensor& prompt) {
  decoder_->prefill(prompt.narrow(1, 0, prompt.size(1) - 1), cache_);
}

const TokenOutput& DecodeEagerHost::do_step(const at::Tensor& input, const std::vector<float>& thresholds,
                                            int position) {
  const DecoderConfig& c = config();
  TokenCounters& counters = record();
  at::Tensor h = decoder_->embed(input, position);
  at::Tensor rows;               // batch indices of the running rows; undefined while every row runs
  at::Tensor left_h, left_rows;  // the rows that left: their states at the exit, their batch indices
  int64_t running = input.size(0), left = 0;
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
      if (running == 0) counters.bytes_read += decoder_propagation_bytes(c);
    }
    if (running == 0) continue;
    h = decoder_->layer(l, h, cache_, rows, position);
    counters.layers_run += static_cast<double>(running);
    counters.flops_executed += static_cast<double>(running) * decoder_layer_flops(c, position);
    counters.bytes_read +=
        decoder_layer_bytes(c) + static_cast<double>(running) * decoder_cache_read_bytes(c, position);
    if (exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;

    const at::Tensor logits = decoder_->logits(h);
    count_head(running);
    // The host decision: one read of the running rows' exit test.
    const at::Tensor fire = reader_.read(TorchDecoder::exit_test(logits, thresholds[exit - 1]), running);
    ++counters.host_syncs;
    const bool* fires = fire.data_ptr<bool>();
    const int64_t fired = std::count(fires, fires + running, true);
    if (fired > 0) {
      at::Tensor leave = at::empty({fired}, at::kLong), stay = at::empty({running - fired}, at::kLong);
      int64_t* leave_at = leave.data_ptr<int64_t>();
      int64_t* stay_at = stay.data_ptr<int64_t>();
      for (int64_t r = 0; r < running; ++r) *(fires[r] ? leave_at++ : stay_at++) = r;
      leave = leave.to(h.device());
      stay = stay.to(h.device());
      const at::Tensor leaving_rows = rows.defined() ? rows.index_select(0, leave) : leave;
      write_rows(leaving_rows, logits.index_select(0, leave), exit);
      const at::Tensor leaving_h = h.index_select(0, leave);
      left_h = left > 0 ? at::cat({left_h, leaving_h}) : leaving_h;
      left_rows = left > 0 ? at::cat({left_rows, leaving_rows}) : leaving_rows;
      left += fired;
      running -= fired;
      if (running > 0) {
        h = h.index_select(0, stay);
        rows = rows.defined() ? rows.index_select(0, stay) : stay;
      }
    }
    ++exit;
  }
  if (running > 0) {
    write_rows(rows, decoder_->logits(h), c.final_exit());
    count_head(running);
  }
  return output_;
}

void DecodeEagerHost::write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit) {
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

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(
    DecodeEagerHost, "eager_host", Engine::torch,
    "the host reads each exit's test; running rows go on compacted, left ones propagate");

}  // namespace condbench
