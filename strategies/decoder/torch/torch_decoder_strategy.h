#pragma once
// The torch engine's decoder strategies: LibTorch's current stream, as every torch-engine
// strategy (torch/torch_strategy.h).
#include "condbench/decoder/torch_decoder.h"
#include "torch/torch_strategy.h"

namespace condbench {

using TorchDecoderStrategy = OnTorchStream<DecoderStrategy>;

}  // namespace condbench
