#pragma once
// eager_host (decoder, engine torch): the decode loop as it is usually written. After each exit
// layer the host reads the exit test of the rows still running and decides: the rows that fire
// take that exit's argmax as their token and leave; the others go on, compacted. A row that left
// is carried to the last layer by its keys and values only: each deeper layer projects them from
// its state at the exit (propagate), so the next tokens find a whole cache. eager_host_pinned
// (CUDA) reads each test into pinned memory with an async copy and an event wait instead
// (strategies/decoder/torch/cuda/eager_host_pinned.cpp).
#include <ATen/ATen.h>

#include <memory>

#include "decoder/torch/torch_decoder_strategy.h"

#if CONDBENCH_CUDA
#include "condbench/torch_cuda.h"
#endif

namespace condbench {

class DecodeEagerHost : public TorchDecoderStrategy {
 public:
  static constexpr bool kHostDecides = true;
  enum class ReadBack { blocking_copy, pinned_event };

  explicit DecodeEagerHost(Device device, ReadBack read_back = ReadBack::blocking_copy)
      : TorchDecoderStrategy(device), read_back_(read_back) {}

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override;
  void do_start(const at::Tensor& prompt) override;
  const DecodeOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override;

 private:
  // The exit test of `running` rows, on the host.
  at::Tensor read_decision(const at::Tensor& fire, int64_t running);
  // `rows` of the batch (every row when undefined) take exit `exit` with these logits.
  void write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit);

  ReadBack read_back_;
  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  DecodeOutput output_;
  at::Tensor pinned_;  // ReadBack::pinned_event: where each test lands
#if CONDBENCH_CUDA
  std::unique_ptr<torch_cuda::PinnedReadback> readback_;
#endif
};

}  // namespace condbench
