#include "condbench/strategy.h"

#include "condbench/family.h"

#include <ATen/record_function.h>

#include "condbench/aten_calls.h"
#include "condbench/error.h"

namespace condbench {

namespace {

thread_local int64_t aten_calls = 0, aten_depth = 0;

std::unique_ptr<at::ObserverContext> enter_aten_call(const at::RecordFunction& /*fn*/) {
  if (aten_depth++ == 0) ++aten_calls;
  return nullptr;
}
void leave_aten_call(const at::RecordFunction& /*fn*/, at::ObserverContext* /*context*/) { --aten_depth; }

}  // namespace

AtenCallCount::AtenCallCount()
    : handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(&enter_aten_call, &leave_aten_call)
                                             .scopes({at::RecordScope::FUNCTION})
                                             .needsInputs(false))) {
  aten_calls = 0;
  aten_depth = 0;
}
AtenCallCount::~AtenCallCount() { at::removeCallback(handle_); }
int64_t AtenCallCount::calls() const { return aten_calls; }

Unsupported mlp_only(const ModelConfig& config) {
  if (config.family == &model_family("mlp")) return std::nullopt;
  return "its kernels compute the mlp family's Linear + ReLU blocks, not those of " + config.family->name();
}

Unsupported StrategyInfo::unsupported(const ModelConfig& config, int64_t batch) const {
  if (std::string why = config.family->unsupported_on(to_string(device)); !why.empty()) return why;
  return supports(config, device, batch);
}

Unsupported Strategy::supports(const ModelConfig& /*config*/, Device /*device*/, int64_t /*batch*/) {
  return std::nullopt;
}

std::optional<std::string> Strategy::build_note(const ModelConfig& /*config*/, Device /*device*/) {
  return std::nullopt;
}

Strategy::Observed Strategy::observed_run(const at::Tensor& input, const std::vector<float>& thresholds) {
  Observed observed;
  const int64_t aten_calls =
      aten_calls_of(launches_are_aten_calls(), [&] { observed.output = run(input, thresholds); });
  finish();
  observed.counters = record_;
  do_read_device_counters(observed.output, observed.counters);
  observed.counters.launches += static_cast<double>(aten_calls);
  return observed;
}

void StrategyInfo::declare() {
  if (single_launch) declares.emplace_back("one launch per inference");
  if (skips_blocks_on_device)
    declares.emplace_back(skips_final_head_on_device ? "skips blocks and the final head on the device"
                                                     : "skips blocks on the device");
}

}  // namespace condbench
