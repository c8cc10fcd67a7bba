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
  // --decoder=SIZE=N,..., the old spelling, gives the size flags one value each
  std::map<std::string, std::string> sized = flags;
  DecoderConfig old;
  const auto old_spelling = flags.find("--decoder");
  const std::vector<std::string> given =
      old_spelling == flags.end() ? std::vector<std::string>{} : apply_decoder_sizes(old_spelling->second, old);
  const std::vector<FamilyAxis>& axes = decoder_family().axes();
  for (const FamilyAxis& axis : axes) {
    if (std::find(given.begin(), given.end(), axis.key) == given.end()) continue;
    if (flags.count(axis.flag()) > 0) fail(axis.flag() + ": --decoder=" + axis.key + " gives it too; drop one");
    sized[axis.flag()] = std::to_string(old.size(axis.key));
  }
  std::vector<DecoderConfig> configs;
  auto add = [&](const DecoderConfig& c) {
    if (std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
  };
  for (const std::vector<int>& sizes : cli::size_combinations(decoder_family(), sized, full)) {
    DecoderConfig c;
    for (size_t i = 0; i < axes.size(); ++i) c.set(axes[i].key, sizes[i]);
    add(c);
  }
  if (full)
    for (const DecoderConfig& extra : decoder_family().full_extras()) add(extra);
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
