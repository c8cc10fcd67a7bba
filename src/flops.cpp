#include "condbench/flops.h"

#include "condbench/family.h"

namespace condbench {

double block_flops(const ModelConfig& config, int block) { return config.family->block_flops(config, block); }

double head_flops(const ModelConfig& config, int head) { return config.family->head_flops(config, head); }

double useful_flops(const ModelConfig& config, int exit_id) {
  const int blocks_run = exit_id <= config.blocks ? exit_id : config.blocks;
  double flops = 0.0;
  for (int b = 0; b < blocks_run; ++b) flops += block_flops(config, b);
  // exit heads 1..blocks_run were evaluated; leaving at the final head adds that one too
  const int heads_run = exit_id <= config.blocks ? exit_id : config.blocks + 1;
  for (int h = 0; h < heads_run; ++h) flops += head_flops(config, h);
  return flops;
}

double full_model_flops(const ModelConfig& config) { return useful_flops(config, config.final_exit()); }

double block_bytes(const ModelConfig& config, int block) { return config.family->block_bytes(config, block); }

double head_bytes(const ModelConfig& config, int head) { return config.family->head_bytes(config, head); }

double full_model_bytes(const ModelConfig& config) {
  double bytes = 0;
  for (int b = 0; b < config.blocks; ++b) bytes += block_bytes(config, b) + head_bytes(config, b);
  return bytes + head_bytes(config, config.blocks);
}

}  // namespace condbench
