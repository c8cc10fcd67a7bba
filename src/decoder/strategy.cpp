#include "condbench/decoder/strategy.h"

#include "condbench/aten_calls.h"

namespace condbench {

Unsupported DecoderStrategy::supports(const DecoderConfig& /*config*/, Device /*device*/, int64_t /*batch*/) {
  return std::nullopt;
}

DecoderStrategy::Observed DecoderStrategy::observed_step(const at::Tensor& input,
                                                         const std::vector<float>& thresholds) {
  Observed observed{};
  const int64_t aten_calls =
      aten_calls_of(launches_are_aten_calls(), [&] { observed.output = &step(input, thresholds); });
  finish();
  observed.counters = counters();
  observed.counters.launches += static_cast<double>(aten_calls);
  return observed;
}

void count_step_work(DecodeCounters& k, const DecoderConfig& c, double rows, int layers_run, int heads, int position) {
  const int propagated = c.layers - layers_run;
  k.layers_run = rows * layers_run;
  k.layers_propagated = rows * propagated;
  k.heads_run = rows * heads;
  k.flops_executed = rows * (layers_run * decoder_layer_flops(c, position) + propagated * decoder_propagation_flops(c) +
                             heads * decoder_head_flops(c));
  k.bytes_read = layers_run * (decoder_layer_bytes(c) + rows * decoder_cache_read_bytes(c, position)) +
                 propagated * decoder_propagation_bytes(c) + decoder_head_bytes(c);
}

void DecoderStrategyInfo::declare() {
  if (host_decides) declares.emplace_back("decides on the host");
  if (computes_every_row) declares.emplace_back("runs every layer for every row");
  if (skips_when_all_left) declares.emplace_back("skips the deeper layers on the device once every row has left");
}

}  // namespace condbench
