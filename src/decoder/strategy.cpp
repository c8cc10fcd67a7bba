#include "condbench/decoder/strategy.h"

#include <algorithm>

#include "condbench/error.h"

namespace condbench {

Unsupported DecoderStrategy::supports(const DecoderConfig& /*config*/, Device /*device*/, int64_t /*batch*/) {
  return std::nullopt;
}

std::string DecoderStrategyInfo::key() const {
  return std::string(to_string(device)) + "/" + to_string(engine) + "/" + name;
}

std::vector<DecoderStrategyInfo>& decoder_strategies() {
  static std::vector<DecoderStrategyInfo> entries;
  return entries;
}

bool register_decoder_strategy(DecoderStrategyInfo info) {
  std::vector<DecoderStrategyInfo>& entries = decoder_strategies();
  for (const DecoderStrategyInfo& known : entries)
    if (known.key() == info.key()) fail("decoder strategy " + info.key() + " registered twice");
  entries.push_back(std::move(info));
  // Registration order depends on link order; keep listings stable.
  std::sort(entries.begin(), entries.end(),
            [](const DecoderStrategyInfo& a, const DecoderStrategyInfo& b) { return a.key() < b.key(); });
  return true;
}

}  // namespace condbench
