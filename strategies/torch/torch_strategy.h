#pragma once
// What the torch engine's strategies share, of either timed unit (a family's inference, a decoder's
// token): on CUDA they run on LibTorch's current stream, which finish() synchronises and GPU timing
// records on; their launches are the ATen operator calls the host makes, counted by observation
// (Strategy::observed_run, DecoderStrategy::observed_step), plus the graph replays they record.
#include <optional>

#include "condbench/strategy.h"
#include "condbench/torch_device.h"

namespace condbench {

// LibTorch's current stream on `device`: finish_torch_stream waits for it (nothing on the CPU);
// torch_stream is its handle (what AOTInductor's runner is given), nullopt on the CPU.
void finish_torch_stream(Device device);
std::optional<void*> torch_stream(Device device);

// The torch engine's part of a strategy whose base is Strategy or DecoderStrategy.
template <typename Base>
class OnTorchStream : public Base {
 public:
  using Base::Base;
  void finish() override { finish_torch_stream(this->device()); }
  std::optional<void*> cuda_stream() const override { return torch_stream(this->device()); }

 protected:
  bool launches_are_aten_calls() const final { return true; }
};

using TorchStrategy = OnTorchStream<Strategy>;

}  // namespace condbench
