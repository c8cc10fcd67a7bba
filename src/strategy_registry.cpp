#include <algorithm>

#include "condbench/error.h"
#include "condbench/strategy.h"

namespace condbench {

const char* to_string(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }
const char* to_string(Engine engine) { return engine == Engine::torch ? "torch" : "native"; }

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
