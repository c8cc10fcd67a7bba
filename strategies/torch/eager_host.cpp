// eager_host (engine torch): see eager_host.h.
#include "torch/eager_host.h"

#include <algorithm>

#include "condbench/flops.h"

namespace condbench {

void EagerHost::prepare(const EarlyExitModel& model, int64_t batch) {
  layers_ = model->layers(torch_device(device()));
  stages_ = nvtx::StageRanges(layers_->config().blocks);
  const auto on_device = at::TensorOptions().device(torch_device(device()));
  exit_id_ = at::empty({batch}, on_device.dtype(at::kInt));
  logits_ = at::empty({batch, layers_->config().num_classes}, on_device.dtype(at::kFloat));
  output() = {exit_id_, logits_};
  reader_.prepare(batch);
}

const ExitOutput& EagerHost::do_run(const at::Tensor& input, const std::vector<float>& thresholds) {
  const ModelConfig& config = layers_->config();
  at::Tensor h = input;
  at::Tensor rows;  // batch indices of the active rows; undefined while all rows are active
  int64_t active = input.size(0);
  record().bytes_read = static_cast<double>(input.numel()) * sizeof(float);
  for (int k = 0; k < config.blocks; ++k) {
    at::Tensor logits;
    {
      const nvtx::ScopedRange range(nvtx::Level::stage, stages_.block(k));
      h = layers_->block(k, h);
      logits = layers_->head(k, h);
    }
    const nvtx::ScopedRange range(nvtx::Level::stage, stages_.exit_test(k + 1));
    const at::Tensor fire = layers_->exit_test(logits, thresholds[k]);
    record().flops_executed += active * (block_flops(config, k) + head_flops(config, k));
    record().bytes_read += block_bytes(config, k) + head_bytes(config, k);

    // The host decision: one device->host read of the exit test.
    const at::Tensor fire_host = reader_.read(fire, active);
    ++record().host_syncs;
    record().bytes_read_back += static_cast<double>(active);  // one bool per active row
    const bool* fires = fire_host.data_ptr<bool>();
    const int64_t fired = std::count(fires, fires + active, true);
    if (fired == 0) continue;
    if (fired == active) {
      write_rows(rows, logits, k + 1);
      return output();
    }
    // Some rows leave here: split the active set on the host, scatter the leavers, compact the rest.
    at::Tensor leave = at::empty({fired}, at::kLong), stay = at::empty({active - fired}, at::kLong);
    int64_t* leave_at = leave.data_ptr<int64_t>();
    int64_t* stay_at = stay.data_ptr<int64_t>();
    for (int64_t r = 0; r < active; ++r) *(fires[r] ? leave_at++ : stay_at++) = r;
    const bool had_rows = rows.defined();
    leave = leave.to(h.device());
    stay = stay.to(h.device());
    write_rows(had_rows ? rows.index_select(0, leave) : leave, logits.index_select(0, leave), k + 1);
    h = h.index_select(0, stay);
    rows = had_rows ? rows.index_select(0, stay) : stay;
    active -= fired;
  }
  const at::Tensor logits = layers_->head(config.blocks, h);
  record().flops_executed += active * head_flops(config, config.blocks);
  record().bytes_read += head_bytes(config, config.blocks);
  write_rows(rows, logits, config.final_exit());
  return output();
}

// Results for `rows` of the batch (all rows when undefined) leave at exit `exit_id`.
void EagerHost::write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit_id) {
  if (rows.defined()) {
    logits_.index_copy_(0, rows, logits);
    exit_id_.index_fill_(0, rows, exit_id);
  } else {
    logits_.copy_(logits);
    exit_id_.fill_(exit_id);
  }
}

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(
    EagerHost, "eager_host", Engine::torch,
    "reads every exit test back to the host, which decides; active rows go on compacted");

}  // namespace condbench
