#pragma once
// FLOP and byte accounting shared by every strategy. A Linear in->out costs 2*in*out FLOPs per row (one
// multiply and one add per weight), per token for the transformer, whose attention adds its score
// and weighted-sum products; bias, activations, LayerNorm, softmax and the exit test are not
// counted. A row that leaves at exit k needed blocks 1..k and heads exit1..exit{k}; the final
// exit also needs the final head. That is the row's useful work: what it could not have done without.
#include <cstdint>

#include "condbench/config.h"

namespace condbench {

double block_flops(const ModelConfig& config, int block);  // per row
// Head `head` (0..blocks-1: exit head head+1; blocks: the final head), per row.
double head_flops(const ModelConfig& config, int head);
// Work a row must do to leave at exit_id (1..blocks+1).
double useful_flops(const ModelConfig& config, int exit_id);
// Every block and every head, once: what `masked` runs for each row.
double full_model_flops(const ModelConfig& config);

// Bytes of a Linear's weights and bias (float): what computing it reads at the least, once per
// inference whatever the batch (the bytes_read counter, the report's memory floor).
double block_bytes(const ModelConfig& config, int block);
double head_bytes(const ModelConfig& config, int head);
// Every block and every head.
double full_model_bytes(const ModelConfig& config);

}  // namespace condbench
