#include "condbench/result_format.h"

#include <algorithm>

#include "condbench/error.h"
#include "condbench/scenario.h"

namespace condbench {

BenchmarkName& BenchmarkName::label(std::string value) {
  parts_.push_back({"", std::move(value)});
  return *this;
}

BenchmarkName& BenchmarkName::axis(std::string key, std::string value) {
  parts_.push_back({std::move(key), std::move(value)});
  return *this;
}

std::optional<BenchmarkName> BenchmarkName::parse(std::string_view name) {
  BenchmarkName out;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(name.find('/', begin), name.size());
    const std::string_view part = name.substr(begin, end - begin);
    const size_t colon = part.find(':');
    if (part.empty()) return std::nullopt;
    if (colon == std::string_view::npos) {
      out.label(std::string(part));
    } else {
      const std::string_view key = part.substr(0, colon), value = part.substr(colon + 1);
      if (key.empty() || value.empty() || value.find(':') != std::string_view::npos) return std::nullopt;
      out.axis(std::string(key), std::string(value));
    }
    if (end == name.size()) return out;
    begin = end + 1;
  }
}

std::string BenchmarkName::str() const {
  std::string out;
  for (const Part& p : parts_) {
    if (!out.empty()) out += '/';
    out += p.key.empty() ? p.value : p.key + ":" + p.value;
  }
  return out;
}

std::vector<std::string> BenchmarkName::labels() const {
  std::vector<std::string> out;
  for (const Part& p : parts_)
    if (p.key.empty()) out.push_back(p.value);
  return out;
}

std::optional<std::string> BenchmarkName::axis_value(std::string_view key) const {
  for (const Part& p : parts_)
    if (!p.key.empty() && p.key == key) return p.value;
  return std::nullopt;
}

std::optional<std::string> BenchmarkName::scenario() const {
  for (const Part& p : parts_)
    if (p.key == "exit" || p.key == "mix") return p.key + ":" + p.value;
  return std::nullopt;
}

std::string BenchmarkName::without_axes() const {
  std::string out;
  for (const std::string& l : labels()) out += (out.empty() ? "" : "/") + l;
  return out;
}

namespace {

bool all_digits(std::string_view text, size_t most) {
  return !text.empty() && text.size() <= most && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// The N of an axis "batch:N": 1 to 9 digits, so that it always fits (a bigger model is not condbench's).
int64_t size_axis(const BenchmarkName& name, const std::string& key) {
  const std::optional<std::string> digits = name.axis_value(key);
  if (!digits) fail("benchmark name '" + printable(name.str()) + "' has no " + key + ":N");
  if (!all_digits(*digits, 9))
    fail("benchmark name part '" + printable(key + ":" + *digits) + "' is not " + key + ":N");
  return std::stoll(*digits);
}

}  // namespace

std::string_view without_time_suffix(std::string_view run_name) {
  constexpr std::string_view kTimeSuffix = "/real_time";
  if (run_name.size() > kTimeSuffix.size() && run_name.substr(run_name.size() - kTimeSuffix.size()) == kTimeSuffix)
    run_name.remove_suffix(kTimeSuffix.size());
  return run_name;
}

std::optional<BenchmarkId> BenchmarkId::read(std::string_view run_name) {
  run_name = without_time_suffix(run_name);
  BenchmarkId id;
  id.name = std::string(run_name);
  const bool ours = run_name.rfind("early_exit/", 0) == 0 || run_name.rfind("primitive/", 0) == 0;
  const std::optional<BenchmarkName> parsed = BenchmarkName::parse(run_name);
  if (!parsed) {
    if (ours) fail("benchmark name '" + printable(id.name) + "' is not parts and key:value axes");
    return std::nullopt;
  }
  const std::vector<std::string> labels = parsed->labels();
  if (labels.size() == 3 && labels[0] == "primitive" && labels.size() == parsed->parts().size()) {
    id.primitive = true;
    id.device = labels[1];
    id.primitive_name = labels[2];
    return id;
  }
  if (labels.empty() || labels[0] != "early_exit") return std::nullopt;
  if (labels.size() != 4)
    fail("benchmark name '" + printable(id.name) + "' is not early_exit/<device>/<engine>/<strategy>/<axes>");
  id.device = labels[1];
  id.engine = labels[2];
  id.strategy = labels[3];
  const std::optional<std::string> scenario = parsed->scenario();
  if (!scenario) fail("benchmark name '" + printable(id.name) + "' has no scenario (exit:K or mix:SHAPE)");
  // Scenario::parse's grammar (exit:K with K >= 1, mix:SHAPE of its shapes); K of at most 4 digits,
  // as the report sorts and ranks scenarios by K.
  bool known = scenario->rfind("exit:", 0) != 0 || all_digits(std::string_view(*scenario).substr(5), 4);
  try {
    if (known) (void)Scenario::parse(*scenario);
  } catch (const Error&) {
    known = false;
  }
  if (!known) fail("benchmark scenario '" + printable(*scenario) + "' is not exit:K or mix:SHAPE");
  id.scenario = *scenario;
  id.batch = size_axis(*parsed, "batch");
  if (id.batch < 1) fail("benchmark name part 'batch:" + std::to_string(id.batch) + "' is not batch:N with N >= 1");
  id.blocks = size_axis(*parsed, "blocks");
  bool scenario_seen = false;
  for (const BenchmarkName::Part& p : parsed->parts()) {
    if (p.key.empty() || p.key == "batch") continue;
    if (!scenario_seen && (p.key == "exit" || p.key == "mix")) {
      scenario_seen = true;
      continue;
    }
    id.model.push_back(p);
  }
  return id;
}

std::string BenchmarkId::without_axes() const {
  return primitive ? "primitive/" + device + "/" + primitive_name : "early_exit/" + device + "/" + strategy_key();
}

namespace {

// A model whose depth is its layers (the decoder) names its blocks axis for the exits before the
// final one, which its layers and exit_every already say: not a depth to print.
bool depth_in_layers(const std::vector<BenchmarkName::Part>& model) {
  return std::any_of(model.begin(), model.end(), [](const BenchmarkName::Part& p) { return p.key == "layers"; });
}

}  // namespace

std::string model_family(const std::vector<BenchmarkName::Part>& model) {
  for (const BenchmarkName::Part& p : model)
    if (p.key == "model") return p.value;
  return "";
}

std::string model_text(const std::vector<BenchmarkName::Part>& model) {
  std::string family, sizes, depth;
  const bool layered = depth_in_layers(model);
  for (const BenchmarkName::Part& p : model) {
    if (p.key == "model" && family.empty())
      family = p.value + ": ";
    else if (p.key == "blocks" && depth.empty())
      depth = layered ? "" : p.value + " blocks";
    else
      sizes += (sizes.empty() ? "" : ", ") + p.key + " " + p.value;
  }
  if (!depth.empty()) sizes += (sizes.empty() ? "" : ", ") + depth;
  return family + sizes;
}

std::string model_short(const std::vector<BenchmarkName::Part>& model) {
  static const std::pair<std::string_view, std::string_view> kLetters[] = {
      {"hidden", "h"}, {"d_model", "d"}, {"heads", "a"},      {"ffn", "f"},    {"seq", "s"},      {"layers", "L"},
      {"vocab", "v"},  {"context", "c"}, {"exit_every", "e"}, {"prompt", "p"}, {"generate", "g"}, {"in_features", "i"}};
  std::string family = "mlp", sizes, depth;
  const bool layered = depth_in_layers(model);
  bool named = false;
  for (const BenchmarkName::Part& p : model) {
    if (p.key == "model" && !named) {
      family = p.value;
      named = true;
      continue;
    }
    if (p.key == "blocks" && depth.empty()) {
      depth = layered ? "" : " ×" + p.value;
      continue;
    }
    std::string part = p.key + "=" + p.value;  // an axis no reader knows, as the name has it
    for (const auto& [key, letter] : kLetters)
      if (p.key == key) part = std::string(letter) + p.value;
    sizes += " " + part;
  }
  return family + sizes + depth;
}

std::string model_order(const std::vector<BenchmarkName::Part>& model) {
  std::string key;
  for (const BenchmarkName::Part& p : model) {
    key += p.key + ':';
    // numbers padded to one width sort by value; 9 digits is the most a size axis has
    if (all_digits(p.value, 12)) key += std::string(12 - p.value.size(), '0');
    key += p.value + '/';
  }
  return key;
}

int scenario_rank(std::string_view scenario) {
  if (scenario.rfind("exit:", 0) == 0 && all_digits(scenario.substr(5), 4))
    return std::stoi(std::string(scenario.substr(5)));
  if (scenario == "mix:early") return 10000;
  if (scenario == "mix:uniform") return 10001;
  if (scenario == "mix:late") return 10002;
  return 20000;
}

std::string strategy_context_key(const std::string& key, TimedUnit unit) {
  return kStrategyContext + key + (unit == TimedUnit::token ? kTokenStrategySuffix : "");
}

}  // namespace condbench
