#include "torch/exit_test_reader.h"

namespace condbench {

void ExitTestReader::prepare([[maybe_unused]] int64_t rows) {
#if CONDBENCH_CUDA
  if (mode_ == Mode::pinned_event) {
    pinned_ = at::empty({rows}, at::TensorOptions().dtype(at::kBool).pinned_memory(true));
    readback_ = std::make_unique<torch_cuda::PinnedReadback>();
  }
#endif
}

}  // namespace condbench
