#include "condbench/flops.h"

namespace condbench {

double block_flops(const ModelConfig& config, int block) {
  if (config.family == ModelFamily::transformer) {
    // Per row of seq tokens: the q/k/v and output projections (4 d^2 per token), the two FFN
    // Linears (2 d ffn per token), attention scores and their weighted sum (2 seq d per token,
    // every head together).
    const double s = config.seq, d = config.d_model, f = config.ffn;
    return 2.0 * s * (4.0 * d * d + 2.0 * d * f) + 4.0 * s * s * d;
  }
  const double in = block == 0 ? config.in_features : config.hidden;
  return 2.0 * in * config.hidden;
}

// A transformer head reads token 0 only; its LayerNorm is not counted (like a bias or a ReLU).
double head_flops(const ModelConfig& config) { return 2.0 * config.width() * config.num_classes; }

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
  if (config.family == ModelFamily::transformer) {
    // in_proj 3d^2 + 3d, out_proj d^2 + d, linear1 ffn d + ffn, linear2 d ffn + d, two norms 4d
    const double d = config.d_model, f = config.ffn;
    return 4.0 * (4.0 * d * d + 2.0 * d * f + 9.0 * d + f);
  }
  // 2 FLOPs per weight, 4 bytes per weight, and the bias
  return 2.0 * block_flops(config, block) + 4.0 * config.hidden;
}

// The Linear's weights and bias (2 FLOPs, 4 bytes per weight), and a transformer head's norm.
double head_bytes(const ModelConfig& config) {
  const double norm = config.family == ModelFamily::transformer ? 8.0 * config.d_model : 0.0;
  return 2.0 * head_flops(config) + 4.0 * config.num_classes + norm;
}

double full_model_bytes(const ModelConfig& config) {
  double bytes = (config.blocks + 1) * head_bytes(config);
  for (int b = 0; b < config.blocks; ++b) bytes += block_bytes(config, b);
  return bytes;
}

}  // namespace condbench
