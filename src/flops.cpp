#include "condbench/flops.h"

namespace condbench {

double block_flops(const ModelConfig& config, int block) {
  const double in = block == 0 ? config.in_features : config.hidden;
  return 2.0 * in * config.hidden;
}

double head_flops(const ModelConfig& config) { return 2.0 * config.hidden * config.num_classes; }

double useful_flops(const ModelConfig& config, int exit_id) {
  const int blocks_run = exit_id <= config.blocks ? exit_id : config.blocks;
  double flops = 0.0;
  for (int b = 0; b < blocks_run; ++b) flops += block_flops(config, b);
  // exit heads 1..blocks_run were evaluated; leaving at the final head adds that one too
  const int heads_run = exit_id <= config.blocks ? exit_id : config.blocks + 1;
  return flops + heads_run * head_flops(config);
}

double full_model_flops(const ModelConfig& config) { return useful_flops(config, config.final_exit()); }

double block_bytes(const ModelConfig& config, int block) {
  // 2 FLOPs per weight, 4 bytes per weight, and the bias
  return 2.0 * block_flops(config, block) + 4.0 * config.hidden;
}

double head_bytes(const ModelConfig& config) { return 2.0 * head_flops(config) + 4.0 * config.num_classes; }

double full_model_bytes(const ModelConfig& config) {
  double bytes = (config.blocks + 1) * head_bytes(config);
  for (int b = 0; b < config.blocks; ++b) bytes += block_bytes(config, b);
  return bytes;
}

}  // namespace condbench
