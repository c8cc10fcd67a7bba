// host_if (engine torch, example): the early exit as a first attempt writes it — the whole batch
// through each block, the confidences read to the host after each head, a plain `if` per row, and
// the loop over blocks left when the last row has exited. Rows that left still ride along (no
// compaction: torch/eager_host is that step further). The shortest honest strategy: condbench's
// tests run it against the reference and check its counters like any other (examples/CMakeLists.txt).
//
// A strategy is this one file: a class with prepare() (everything that allocates, outside the timed
// region) and do_run() (one inference, recording what it did; bytes_read stays unset: "not known"),
// and the registration line at the end.
#include <algorithm>

#include "condbench/flops.h"
#include "torch/torch_strategy.h"

namespace condbench {
namespace {

class HostIf final : public TorchStrategy {
 public:
  using TorchStrategy::TorchStrategy;
  static constexpr bool kHostDecides = true;  // one host read per exit test reached (the tests check it)

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    layers_ = model->layers(torch_device(device()));
    output() = {at::empty({batch}, at::kInt), at::empty({batch, layers_->config().num_classes}, at::kFloat)};
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    const ModelConfig& config = layers_->config();
    const int64_t rows = input.size(0), classes = config.num_classes;
    int* exit_id = output().exit_id.data_ptr<int>();
    float* out = output().logits.data_ptr<float>();
    std::fill_n(exit_id, rows, 0);  // 0: not left yet
    int64_t left = 0;
    at::Tensor h = input;
    for (int k = 0; k <= config.blocks && left < rows; ++k) {
      if (k < config.blocks) h = layers_->block(k, h);
      const at::Tensor logits = layers_->head(k, h);  // after the last block: the final head
      record().flops_executed +=
          static_cast<double>(rows) * ((k < config.blocks ? block_flops(config, k) : 0) + head_flops(config, k));
      if (k < config.blocks) ++record().host_syncs;  // the if below reads the confidences here
      const float* l = logits.data_ptr<float>();
      // the exit rule's score, the model's own (a model file may define it): [rows], read here
      const at::Tensor score = k < config.blocks ? layers_->confidence(logits).contiguous() : at::Tensor();
      for (int64_t r = 0; r < rows; ++r) {
        if (exit_id[r] != 0) continue;
        if (k < config.blocks && !(score.data_ptr<float>()[r] > thresholds[k])) continue;
        exit_id[r] = k + 1;
        std::copy_n(l + r * classes, classes, out + r * classes);
        ++left;
      }
    }
    return output();
  }

 private:
  std::shared_ptr<const TorchLayers> layers_;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY(HostIf, "host_if", Engine::torch, Device::cpu,
                            "example: the batch through each block until every row has left; a host if per row");

}  // namespace condbench
