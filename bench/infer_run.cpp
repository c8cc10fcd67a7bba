#include "infer_run.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "cli.h"
#include "condbench/agreement.h"
#include "condbench/error.h"

namespace condbench::infer {
namespace {

// A CPU tensor as nested JSON arrays, its last dimension a list of numbers.
template <typename T>
Json nested(const at::Tensor& t) {
  if (t.dim() == 1) {
    const at::Tensor c = t.contiguous();
    return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.size(0));
  }
  Json out = Json::array();
  for (int64_t i = 0; i < t.size(0); ++i) out.push_back(nested<T>(t[i]));
  return out;
}

}  // namespace

void refuse_argument(const std::string& arg, const OtherModes& others) {
  const std::string flag = arg.substr(0, arg.find('='));
  for (const auto& [flags, hint] : others)
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) fail(flag + ": " + hint);
  fail("unknown argument '" + printable(arg) + "' (--help lists the flags)");
}

int run_strategies(const Run& run) {
  Json out;
  out["model"] = run.model;
  out["rows"] = run.rows;
  out["thresholds"] = run.thresholds;
  out["strategies"] = Json::array();
  std::optional<Answer> first;
  bool agree = true;
  for (const StrategyEntry* registered : run.entries) {
    const StrategyEntry& entry = *registered;
    if (!entry.selected(run.devices, run.strategies)) continue;
    if (const Unsupported why = cli::device_unavailable(entry.device)) fail("--device: " + *why);
    const std::string who = entry.key();
    const auto skip = [&](const std::string& why) { out["skipped"].push_back({{"strategy", who}, {"reason", why}}); };
    if (const Unsupported why = run.unsupported(entry)) {
      skip(*why);
      continue;
    }
    const auto disagree = [&](const std::string& why) {
      std::cerr << "condbench-infer: " << who << ": " << why << "\n";
      agree = false;
    };
    std::optional<Answer> answer;
    try {
      answer = run.answer(entry, disagree);
    } catch (const NotRunnable& e) {  // found only once prepared (a capture refused)
      skip(one_line(e));
      continue;
    }
    if (!answer) continue;
    if (!answer->logits.isfinite().all().item<bool>()) {
      // The first answer's: the model overflows on this data (bad input). A later one's, where the
      // first's are finite: that strategy is wrong, and the answers do not agree.
      if (!first)
        fail(who + ": the logits are not finite: " + run.overflow + " overflow float32, which the model computes in");
      disagree("the logits are not finite where the first strategy's are");
    }
    Json printed;
    printed["device"] = to_string(entry.device);
    printed["engine"] = to_string(entry.engine);
    printed["strategy"] = entry.name;
    if (answer->tokens.defined()) printed["tokens"] = nested<int64_t>(answer->tokens);
    printed["exit_ids"] = nested<int32_t>(answer->exit_ids);
    printed["logits"] = nested<float>(answer->logits);
    out["strategies"].push_back(std::move(printed));
    if (!first) {
      first = answer;
    } else if ((answer->tokens.defined() && !at::equal(answer->tokens, first->tokens)) ||
               !results_agree(answer->exit_ids.flatten(), answer->logits.flatten(0, -2), first->exit_ids.flatten(),
                              first->logits.flatten(0, -2))) {
      agree = false;
    }
  }
  if (out["strategies"].empty()) {
    if (!agree) return 1;         // the one selected was refused, and said why
    if (out.contains("skipped"))  // why, with how to make it run (an aoti package to compile)
      fail("no " + run.noun + " selected can run this: " + out["skipped"][0]["strategy"].get<std::string>() + ": " +
           out["skipped"][0]["reason"].get<std::string>());
    fail("no " + run.noun + " matches --device and --strategy");
  }
  out["agree"] = agree;
  std::cout << out.dump(isatty(STDOUT_FILENO) ? 2 : -1) << "\n";  // indented for a person, one line for a pipe
  return agree ? 0 : 1;
}

}  // namespace condbench::infer
