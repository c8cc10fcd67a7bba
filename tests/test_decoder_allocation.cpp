// The decoder's native fused step allocates nothing (docs/design.md §8): every C++ allocation
// (operator new) and every LibTorch CPU tensor allocation made on this thread during a step is
// counted, and a fused step makes none, at batch 1 and 16, at every exit and in a mix. The torch
// strategies are counted too, as what they are: ATen makes each step's intermediate tensors.
//
// A binary of its own: it replaces the global operator new, which no other test should share.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <new>

#include "condbench/decoder/strategy.h"

namespace {

thread_local bool counting = false;
thread_local long allocations = 0;

// LibTorch's CPU allocator, with this thread's allocations counted while `counting`.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) override {
    if (counting) ++allocations;
    return inner_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { inner_->copy_data(dest, src, count); }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace condbench {
namespace {

// Allocations made by `steps` decode steps of `info` at `batch` rows, after one warm sequence.
DecoderConfig allocation_decoder() {
  DecoderConfig c;
  c.vocab = 64;
  c.d_model = 32;
  c.heads = 2;
  c.layers = 4;
  c.ffn = 48;
  c.context = 16;
  c.prompt = 4;
  c.generate = 8;
  return c;
}

long allocations_per_sequence(const DecoderStrategyInfo& info, int64_t batch, const std::vector<float>& thresholds) {
  const DecoderConfig c = allocation_decoder();
  const DecoderModel model{c, seeded_decoder_parameters(c, 3)};
  std::unique_ptr<DecoderStrategy> strategy = info.make();
  strategy->prepare(model, batch);
  const at::Tensor prompt = at::tensor(seeded_prompts(c, batch, 4), at::kLong).reshape({batch, c.prompt});
  const at::Tensor first = prompt.select(1, c.prompt - 1).contiguous();
  long counted = 0;
  for (int sequence = 0; sequence < 2; ++sequence) {  // the first warms up
    strategy->start(prompt);
    const at::Tensor* input = &first;
    allocations = 0;
    counting = sequence == 1;
    for (int t = 0; t < c.generate; ++t) input = &strategy->step(*input, thresholds).token;
    counting = false;
    counted = allocations;
  }
  return counted;
}

TEST(DecoderAllocation, TheFusedStepAllocatesNothing) {
  static CountingAllocator counting_allocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&counting_allocator, /*priority=*/100);
  bool fused_seen = false;
  for (const DecoderStrategyInfo& info : StrategyRegistry::instance().of<DecoderStrategyInfo>()) {
    if (info.device != Device::cpu) continue;
    for (int64_t batch : {1, 16}) {
      if (info.supports(allocation_decoder(), info.device, batch)) continue;  // (aoti: a package for this size)
      for (const std::vector<float>& thresholds :
           {std::vector<float>{0.0f}, std::vector<float>{1.0f}, std::vector<float>{0.03f}}) {
        const long made = allocations_per_sequence(info, batch, thresholds);
        if (info.engine == Engine::native) {
          fused_seen = true;
          EXPECT_EQ(made, 0) << info.key() << " batch " << batch << " threshold " << thresholds[0];
        } else {
          // Not a requirement: what the counter sees where ATen makes intermediates, so that a
          // count of zero above means the counting works.
          EXPECT_GT(made, 0) << info.key();
        }
      }
    }
  }
  EXPECT_TRUE(fused_seen);
}

}  // namespace
}  // namespace condbench
