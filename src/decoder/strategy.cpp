#include "condbench/decoder/strategy.h"

namespace condbench {

void count_step_work(TokenCounters& k, const DecoderConfig& c, double rows, int layers_run, int heads, int position) {
  const int propagated = c.layers - layers_run;
  k.layers_run = rows * layers_run;
  k.layers_propagated = rows * propagated;
  k.heads_run = rows * heads;
  k.flops_executed = rows * (layers_run * decoder_layer_flops(c, position) + propagated * decoder_propagation_flops(c) +
                             heads * decoder_head_flops(c));
  k.bytes_read = layers_run * (decoder_layer_bytes(c) + rows * decoder_cache_read_bytes(c, position)) +
                 propagated * decoder_propagation_bytes(c) + decoder_head_bytes(c);
}

}  // namespace condbench
