// masked (engine aoti): the peer's torch.where masking (every block and head for every row, each
// row's result picked on the device) exported and compiled by AOTInductor, run from C++
// (aoti_package.h). Any batch: the package is exported with a dynamic batch dimension.
#include "aoti/aoti_package.h"
#include "condbench/flops.h"

namespace condbench {
namespace {

class Masked final : public aoti::AotiStrategy {
 public:
  explicit Masked(Device device) : AotiStrategy(device, "masked") {}

  static Unsupported supports(const ModelConfig& config, Device device, int64_t /*batch*/) {
    return aoti::package_unusable(config, device, "masked");
  }
  static std::optional<std::string> build_note(const ModelConfig& config, Device device) {
    return aoti::package_description(config, device, "masked");
  }

  void prepare(const EarlyExitModel& model, int64_t batch) override {
    AotiStrategy::prepare(model, batch);
    flops_ = static_cast<double>(batch) * full_model_flops(config());
    bytes_ = full_model_bytes(config()) +
             static_cast<double>(batch * config().row_elements()) * c10::elementSize(input_dtype(config()));
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    record().flops_executed = flops_;  // the same work whatever the input
    record().bytes_read = bytes_;
    return keep(run_package(input, thresholds));
  }

 private:
  double flops_ = 0, bytes_ = 0;
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(Masked, "masked", Engine::aoti,
                                         "the torch.where masking exported and compiled by AOTInductor, run from C++");

}  // namespace condbench
