#include "decoder_sizes.h"

#include <algorithm>

#include "cli.h"
#include "condbench/error.h"

namespace condbench {

std::vector<std::string> apply_decoder_sizes(const std::string& sizes, DecoderConfig& config) {
  std::vector<std::string> given;
  if (sizes.empty()) return given;
  for (const std::string& item : cli::split_list("--decoder", sizes)) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const FamilyAxis* axis = decoder_family().axis(key);
    if (eq == std::string::npos || axis == nullptr) {
      std::string known;
      for (const FamilyAxis& a : decoder_family().axes()) known += (known.empty() ? "" : ", ") + a.key;
      fail("--decoder: '" + printable(item) + "' is not SIZE=N with SIZE one of " + known);
    }
    // --decoder=vocab=8,vocab=16 would keep the last in silence
    if (std::find(given.begin(), given.end(), key) != given.end()) fail("--decoder: " + key + " is given twice");
    given.push_back(key);
    config.set(key, static_cast<int>(cli::parse_int("--decoder " + key, item.substr(eq + 1), 1, axis->max)));
  }
  return given;
}

std::vector<DecoderConfig> decoder_configs(const std::map<std::string, std::string>& flags, bool full) {
  const auto old_spelling = flags.find("--decoder");
  const std::string sizes = old_spelling != flags.end() ? old_spelling->second : "";
  std::vector<DecoderConfig> configs = {DecoderConfig{}};
  if (full)
    for (const DecoderConfig& extra : decoder_family().full_extras()) configs.push_back(extra);
  std::vector<std::string> given;
  for (DecoderConfig& c : configs) given = apply_decoder_sizes(sizes, c);
  for (const FamilyAxis& axis : decoder_family().axes()) {
    const auto flag = flags.find(axis.flag());
    if (flag == flags.end()) continue;
    if (std::find(given.begin(), given.end(), axis.key) != given.end())
      fail(axis.flag() + ": --decoder=" + axis.key + " gives it too; drop one");
    const std::vector<int64_t> values = cli::parse_int_list(axis.flag(), flag->second, 1, axis.max);
    std::vector<DecoderConfig> each;
    for (DecoderConfig c : configs)
      for (const int64_t value : values) each.push_back(c.set(axis.key, static_cast<int>(value)));
    configs = std::move(each);
  }
  // --full's second model made the first by the flags (--d-model=768 --heads=12 ...) is one model
  std::vector<DecoderConfig> distinct;
  for (const DecoderConfig& c : configs)
    if (std::find(distinct.begin(), distinct.end(), c) == distinct.end()) distinct.push_back(c);
  configs = std::move(distinct);
  for (const DecoderConfig& c : configs) {
    try {
      c.validate();
    } catch (const Error& e) {
      fail(std::string(given.empty() ? "the decoder: " : "--decoder: ") + e.what());
    }
  }
  return configs;
}

}  // namespace condbench
