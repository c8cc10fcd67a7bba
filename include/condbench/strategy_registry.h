#pragma once
// The one registry of strategies (docs/design.md §2), whatever their timed unit: a family's
// inference (condbench/strategy.h) or a generated token (condbench/token_strategy.h: the decoder's).
// A strategy is one file that defines its class and registers it in one line:
//
//   CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu,
//                               "the whole early-exit forward in one hand-written loop nest: the CPU floor");
//
// Its base class says which kind of entry it makes (Strategy::Info, TokenStrategy<Model>::Info), so
// the one macro serves both units. An entry is keyed by (unit, device, engine, name): a decoder's
// cpu/torch/masked and a family's are two strategies of one name, each registered once; the
// result file's context key says the unit, not the family (strategy_context_key), so two families
// timed per token could not both have one: the registry aborts at start on the second. The last
// argument is what --list says of the strategy: one line, at most 90 characters (checked when it
// compiles). Torch-free: the kinds' own headers hold what a strategy of their unit runs on.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "condbench/result_format.h"  // TimedUnit

namespace condbench {

enum class Device { cpu, cuda };
enum class Engine { torch, native, aoti };
const char* to_string(Device device);
const char* to_string(Engine engine);

// What every registered strategy is, whatever its unit. The kinds derive from it with their maker,
// their supports() and their declarations as booleans the tests read.
struct StrategyEntry {
  TimedUnit unit = TimedUnit::inference;
  std::string name;
  Engine engine = Engine::torch;
  Device device = Device::cpu;
  std::string summary;                // one line: what it does
  bool host_decides = false;          // the strategy's kHostDecides: a host read per exit test reached
  std::vector<std::string> declares;  // what it declares of itself, in words, for --list

  virtual ~StrategyEntry() = default;
  StrategyEntry() = default;
  StrategyEntry(const StrategyEntry&) = default;
  StrategyEntry& operator=(const StrategyEntry&) = default;

  std::string key() const;  // "cpu/torch/eager_host": the name's labels; the unit says which kind
  // Whether --strategy's `text` names it: by its name ("fused", on every device and engine that has
  // one) or by its key ("cpu/native/fused", what --list prints).
  bool answers_to(const std::string& text) const { return text == name || text == key(); }
  // Whether a run on `devices` with --strategy's `names` (empty: every strategy) runs it.
  bool selected(const std::vector<Device>& devices, const std::vector<std::string>& names) const;
  // The result file's context key that describes it (strategy_context_key).
  std::string context_key() const { return strategy_context_key(key(), unit); }
};

class StrategyRegistry {
 public:
  static StrategyRegistry& instance();
  // Returns true so registration can initialise a static; aborts on a second entry of a key.
  bool add(std::unique_ptr<const StrategyEntry> entry);
  // Every strategy, by unit (inference first), then key: listings stay stable whatever the link order.
  const std::vector<std::unique_ptr<const StrategyEntry>>& all() const { return entries_; }
  const StrategyEntry* find(TimedUnit unit, Device device, Engine engine, const std::string& name) const;
  bool knows(const std::string& text) const;  // a name or a key (answers_to), of any unit

  // The entries of one kind (StrategyInfo; a token family's TokenStrategyInfo<Model>), in order.
  // Loop with `const Info& info`: the reference is then the registry's entry, whose address stays
  // valid (the vector of wrappers is a temporary).
  template <typename Info>
  std::vector<std::reference_wrapper<const Info>> of() const {
    std::vector<std::reference_wrapper<const Info>> out;
    for (const auto& entry : entries_)
      if (const auto* info = dynamic_cast<const Info*>(entry.get())) out.emplace_back(*info);
    return out;
  }
  template <typename Info>
  const Info* find(Device device, Engine engine, const std::string& name) const {
    return dynamic_cast<const Info*>(find(Info::kUnit, device, engine, name));
  }

 private:
  std::vector<std::unique_ptr<const StrategyEntry>> entries_;
};

// The entry of kind Info (Type::Info: StrategyInfo, or a token family's TokenStrategyInfo) for the
// strategy Type. Every kind holds alike what the macro passes, Type's maker, its supports() and
// whether the host decides; then the kind reads its own statics (Info::read<Type>).
template <typename Info, typename Type>
std::unique_ptr<const StrategyEntry> describe_entry(const char* name, Engine engine, Device device,
                                                    const char* summary) {
  auto info = std::make_unique<Info>();
  info->name = name;
  info->engine = engine;
  info->device = device;
  info->summary = summary;
  info->make = [device] { return std::make_unique<Type>(device); };
  info->supports = &Type::supports;
  info->host_decides = Type::kHostDecides;
  if (info->host_decides) info->declares.emplace_back("decides on the host");
  info->template read<Type>();
  return info;
}

// What CONDBENCH_REGISTER_STRATEGY calls.
template <typename Type>
bool register_strategy(const char* name, Engine engine, Device device, const char* summary) {
  return StrategyRegistry::instance().add(describe_entry<typename Type::Info, Type>(name, engine, device, summary));
}

#define CONDBENCH_CONCAT_INNER(a, b) a##b
#define CONDBENCH_CONCAT(a, b) CONDBENCH_CONCAT_INNER(a, b)
#define CONDBENCH_REGISTER_STRATEGY(Type, name, engine, device, summary)   \
  static_assert(sizeof(summary) > 1 && sizeof(summary) <= 91,              \
                "a strategy's summary is one line of 1 to 90 characters"); \
  static const bool CONDBENCH_CONCAT(condbench_registered_, __LINE__) =    \
      ::condbench::register_strategy<Type>(name, engine, device, summary)
// A strategy of the same code on the CPU and, in a build with CUDA, on the GPU: both in one line.
#define CONDBENCH_REGISTER_STRATEGY_CPU_AND_CUDA(Type, name, engine, summary)         \
  CONDBENCH_REGISTER_STRATEGY(Type, name, engine, ::condbench::Device::cpu, summary); \
  static const bool CONDBENCH_CONCAT(condbench_registered_cuda_, __LINE__) =          \
      !CONDBENCH_CUDA || ::condbench::register_strategy<Type>(name, engine, ::condbench::Device::cuda, summary)

}  // namespace condbench
