#include "condbench/strategy_registry.h"

#include <algorithm>
#include <tuple>

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

std::string StrategyEntry::key() const { return std::string(to_string(device)) + "/" + to_string(engine) + "/" + name; }

bool StrategyEntry::selected(const std::vector<Device>& devices, const std::vector<std::string>& names) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end() &&
         (names.empty() ||
          std::any_of(names.begin(), names.end(), [&](const std::string& n) { return answers_to(n); }));
}

StrategyRegistry& StrategyRegistry::instance() {
  static StrategyRegistry registry;
  return registry;
}

bool StrategyRegistry::add(std::unique_ptr<const StrategyEntry> entry) {
  if (find(entry->unit, entry->device, entry->engine, entry->name)) fail(entry->context_key() + " is registered twice");
  entries_.push_back(std::move(entry));
  // Registration order depends on link order; keep listings stable.
  std::sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a->unit, a->key()) < std::make_tuple(b->unit, b->key());
  });
  return true;
}

const StrategyEntry* StrategyRegistry::find(TimedUnit unit, Device device, Engine engine,
                                            const std::string& name) const {
  for (const auto& entry : entries_)
    if (entry->unit == unit && entry->device == device && entry->engine == engine && entry->name == name)
      return entry.get();
  return nullptr;
}

bool StrategyRegistry::knows(const std::string& text) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& entry) { return entry->answers_to(text); });
}

}  // namespace condbench
