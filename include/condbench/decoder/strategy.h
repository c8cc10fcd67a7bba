#pragma once
// The decoder's strategies (docs/design.md §8): each a TokenStrategy of DecoderModel
// (condbench/token_strategy.h), timed per generated token, registered in one line as every
// strategy is.
#include "condbench/counters.h"
#include "condbench/decoder/config.h"
#include "condbench/token_strategy.h"

namespace condbench {

// The decoder's weights, on the host in decoder_parameters() order.
struct DecoderModel {
  using Config = DecoderConfig;
  DecoderConfig config;
  FlatParameters params;
};

using DecoderStrategy = TokenStrategy<DecoderModel>;
using DecoderStrategyInfo = TokenStrategyInfo<DecoderModel>;

// Sets the work of a step in `counted` (layers, heads, FLOPs, bytes; its launches and host syncs
// are left as they are): for `rows` rows that ran each row's first `layers_run` layers in full,
// projected the other layers' keys and values, and evaluated `heads` heads, attention reading
// positions 0..`position` (context - 1 over a fixed-size cache, masked: the graphs, the aoti step).
// Weights count once a step, a row's cache rows once per row.
void count_step_work(TokenCounters& counted, const DecoderConfig& c, double rows, int layers_run, int heads,
                     int position);

}  // namespace condbench
