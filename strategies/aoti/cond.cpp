// cond (engine aoti): the question's nested torch.cond deployed to C++ the way PyTorch deploys it —
// torch.export, AOTInductor, torch::inductor::AOTIModelPackageLoader (aoti_package.h). AOTInductor
// lowers each torch.cond to a read of its predicate on the host and a C++ if, so the exit is
// decided on the host; the Linears are its extern calls to ATen.
#include "aoti/aoti_package.h"
#include "condbench/flops.h"

namespace condbench {
namespace {

class Cond final : public aoti::AotiStrategy {
 public:
  static constexpr bool kHostDecides = true;

  explicit Cond(Device device) : AotiStrategy(device, "cond") {}

  static Unsupported supports(const ModelConfig& config, Device device, int64_t batch) {
    if (batch != 1)
      return std::string("torch.cond branches on one boolean, so the exported model takes one row (batch 1 only)");
    return aoti::package_unusable(config, device, "cond");
  }
  static std::optional<std::string> build_note(const ModelConfig& config, Device device) {
    return aoti::package_description(config, device, "cond");
  }

 protected:
  const ExitOutput& do_run(const at::Tensor& input, const std::vector<float>& thresholds) override {
    return keep(run_package(input, thresholds));
  }

  // The exit taken says what ran: blocks and heads up to it, one host decision per exit test.
  void do_read_device_counters(const ExitOutput& output, InferenceCounters& record) const override {
    const int exit_id = output.exit_id.to(at::kCPU).item<int>();
    const ModelConfig& c = config();
    record.host_syncs = std::min(exit_id, c.blocks);
    record.flops_executed = useful_flops(c, exit_id);
    double bytes = static_cast<double>(c.row_elements()) * c10::elementSize(input_dtype(c));
    for (int k = 0; k < std::min(exit_id, c.blocks); ++k) bytes += block_bytes(c, k) + head_bytes(c, k);
    if (exit_id == c.final_exit()) bytes += head_bytes(c, c.blocks);
    record.bytes_read = bytes;
  }
};

}  // namespace

CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(
    Cond, "cond", Engine::aoti, "the nested torch.cond exported and compiled by AOTInductor, run from C++ (batch 1)");

}  // namespace condbench
