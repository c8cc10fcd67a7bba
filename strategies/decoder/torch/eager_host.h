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
#include "torch/exit_test_reader.h"

namespace condbench {

class DecodeEagerHost : public TorchDecoderStrategy {
 public:
  static constexpr bool kHostDecides = true;

  explicit DecodeEagerHost(Device device, ExitTestReader::Mode read_back = ExitTestReader::Mode::blocking_copy)
      : TorchDecoderStrategy(device), reader_(read_back) {}

 protected:
  void do_prepare(const DecoderModel& model, int64_t batch) override;
  void do_start(const at::Tensor& prompt) override;
  const TokenOutput& do_step(const at::Tensor& input, const std::vector<float>& thresholds, int position) override;

 private:
  // `rows` of the batch (every row when undefined) take exit `exit` with these logits.
  void write_rows(const at::Tensor& rows, const at::Tensor& logits, int exit);

  ExitTestReader reader_;
  std::unique_ptr<TorchDecoder> decoder_;
  KvCache cache_;
  TokenOutput output_;
};

}  // namespace condbench
