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
    const auto axis =
        std::find_if(decoder_axes().begin(), decoder_axes().end(), [&](const FamilyAxis& a) { return a.key == key; });
    if (eq == std::string::npos || axis == decoder_axes().end()) {
      std::string known;
      for (const FamilyAxis& a : decoder_axes()) known += (known.empty() ? "" : ", ") + a.key;
      fail("--decoder: '" + printable(item) + "' is not SIZE=N with SIZE one of " + known);
    }
    // --decoder=vocab=8,vocab=16 would keep the last in silence
    if (std::find(given.begin(), given.end(), key) != given.end()) fail("--decoder: " + key + " is given twice");
    given.push_back(key);
    config.set(key, static_cast<int>(cli::parse_int("--decoder " + key, item.substr(eq + 1), 1, axis->max)));
  }
  return given;
}

std::vector<DecoderConfig> decoder_configs(bool full, const std::string& sizes) {
  std::vector<DecoderConfig> configs = {DecoderConfig{}};
  if (full) {
    // GPT-2 small's layers (d_model 768, 12 heads, 12 layers, ffn 3072); the vocabulary stays
    // small, so that the LM head does not hide what the layers cost.
    DecoderConfig gpt2;
    gpt2.d_model = 768;
    gpt2.heads = 12;
    gpt2.layers = 12;
    gpt2.ffn = 3072;
    gpt2.exit_every = 3;
    configs.push_back(gpt2);
  }
  for (DecoderConfig& c : configs) apply_decoder_sizes(sizes, c);
  for (const DecoderConfig& c : configs) {
    try {
      c.validate();
    } catch (const Error& e) {
      fail(std::string("--decoder: ") + e.what());
    }
  }
  return configs;
}

std::vector<int64_t> decoder_batches(bool full) {
  return full ? std::vector<int64_t>{1, 8, 32} : std::vector<int64_t>{1, 8};
}

}  // namespace condbench
