#include "condbench/decoder/strategy.h"

#include <algorithm>

#include "condbench/aten_calls.h"
#include "condbench/error.h"

namespace condbench {

Unsupported DecoderStrategy::supports(const DecoderConfig& /*config*/, Device /*device*/, int64_t /*batch*/) {
  return std::nullopt;
}

DecoderStrategy::Observed DecoderStrategy::observed_step(const at::Tensor& input,
                                                         const std::vector<float>& thresholds) {
  Observed observed{};
  int64_t aten_calls = 0;
  if (launches_are_aten_calls()) {
    const AtenCallCount count;
    observed.output = &step(input, thresholds);
    aten_calls = count.calls();
  } else {
    observed.output = &step(input, thresholds);
  }
  finish();
  observed.counters = counters();
  observed.counters.launches += static_cast<double>(aten_calls);
  return observed;
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
