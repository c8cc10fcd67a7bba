#pragma once
// condbench-infer's one loop, for either timed unit (docs/design.md §5, §8): every registered
// strategy of the model's kind that --device and --strategy select runs the same rows once; each one's
// answer is printed as JSON with whether they all agree, and those that cannot run the rows are
// listed under "skipped" with the reason.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "condbench/strategy.h"

namespace condbench::infer {

// float as the JSON number type, so logits print in their shortest float form.
using Json = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t, std::uint64_t, float>;

// One strategy's answer, on the CPU: an exit id and logits per row (a decoder's per row and token,
// with the tokens it generated).
struct Answer {
  at::Tensor exit_ids;  // int32 [rows] or [rows, tokens]
  at::Tensor logits;    // float32 [rows, classes] or [rows, tokens, vocab]
  at::Tensor tokens;    // int64 [rows, tokens]; undefined for a model timed per inference
};

struct Run {
  // The registered strategies of the model's kind (StrategyRegistry::of: StrategyInfo, or the token
  // family's TokenStrategyInfo), in the registry's order: the callbacks' `entry` is one of them.
  std::vector<const StrategyEntry*> entries;
  std::string model;  // its description, printed: "model=<family> <size>=<value> ..."
  int64_t rows = 0;
  std::vector<float> thresholds;
  std::vector<Device> devices;
  std::vector<std::string> strategies;  // empty: every one
  std::string noun;                     // "strategy", "decoder strategy": what the refusals call one
  std::string overflow;                 // what overflows float32 where the first answer is not finite
  // Why `entry` cannot run these rows at all, or nullopt.
  std::function<Unsupported(const StrategyEntry&)> unsupported;
  // The entry's answer. Throws NotRunnable for a strategy that finds it cannot run only once it tries
  // (a capture refused in prepare): skipped, with why. Calls `disagree(why)` where it ran but is wrong
  // (said, and no agreement), and returns nullopt where it has no answer to print.
  std::function<std::optional<Answer>(const StrategyEntry&, const std::function<void(const std::string&)>& disagree)>
      answer;
};

// Runs every selected strategy of `run.entries`, prints the model, rows, thresholds and their answers
// with whether they agree on stdout, and returns the exit code: 0 when they agree, 1 when they do
// not. Throws condbench::Error where none can run (bad input) or the first answer's logits are not
// finite.
int run_strategies(const Run& run);

// The flags of the families' mode (infer.cpp); a family timed per token's are its TokenInferMode's
// (infer_token.h): each mode names the other's in its refusal.
std::vector<std::string> inference_flags();
// Throws condbench::Error for the argument no flag of the mode took: "<flag>: <hint>" where it is
// one of another mode's flags (each mode's, with what its refusal says), else "unknown argument".
using OtherModes = std::vector<std::pair<std::vector<std::string>, std::string>>;
[[noreturn]] void refuse_argument(const std::string& arg, const OtherModes& others);

// The registered strategies of kind Info, as Run::entries holds them.
template <typename Info>
std::vector<const StrategyEntry*> entries_of() {
  std::vector<const StrategyEntry*> out;
  for (const Info& info : StrategyRegistry::instance().of<Info>()) out.push_back(&info);
  return out;
}

}  // namespace condbench::infer
