#include "condbench/strategy.h"

#include "condbench/family.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "condbench/aten_calls.h"
#include "condbench/error.h"

namespace condbench {

const char* to_string(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }
const char* to_string(Engine engine) {
  switch (engine) {
    case Engine::torch:
      return "torch";
    case Engine::native:
      return "native";
    case Engine::aoti:
      return "aoti";
  }
  return "?";
}

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
  int64_t aten_calls = 0;
  if (launches_are_aten_calls()) {
    const AtenCallCount count;
    observed.output = run(input, thresholds);
    aten_calls = count.calls();
  } else {
    observed.output = run(input, thresholds);
  }
  finish();
  observed.counters = record_;
  do_read_device_counters(observed.output, observed.counters);
  observed.counters.launches += static_cast<double>(aten_calls);
  return observed;
}

std::string StrategyInfo::key() const { return std::string(to_string(device)) + "/" + to_string(engine) + "/" + name; }

StrategyRegistry& StrategyRegistry::instance() {
  static StrategyRegistry registry;
  return registry;
}

bool StrategyRegistry::add(StrategyInfo info) {
  if (find(info.device, info.engine, info.name)) fail("strategy " + info.key() + " registered twice");
  entries_.push_back(std::move(info));
  // Registration order depends on link order; keep listings stable.
  std::sort(entries_.begin(), entries_.end(),
            [](const StrategyInfo& a, const StrategyInfo& b) { return a.key() < b.key(); });
  return true;
}

const StrategyInfo* StrategyRegistry::find(Device device, Engine engine, const std::string& name) const {
  for (const StrategyInfo& info : entries_)
    if (info.device == device && info.engine == engine && info.name == name) return &info;
  return nullptr;
}

bool StrategyRegistry::knows(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const StrategyInfo& info) { return info.name == name; });
}

}  // namespace condbench
