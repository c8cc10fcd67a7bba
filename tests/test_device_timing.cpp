// How many inferences gpu_us enqueues behind one hold of the stream (bench/device_timing.cpp):
// few enough that the kernels they queue stay under the stream's queue, counted in kernels, not
// in the launches counter's units (an ATen call may launch several kernels).
#include <gtest/gtest.h>

#include "device_timing.h"

namespace condbench {
namespace {

InferenceShape shape(Engine engine, int64_t launches) {
  InferenceShape s;
  s.engine = engine;
  s.launches_per_inference = launches;
  return s;
}

TEST(HeldGroup, CountsKernelsNotCalls) {
  // A graph per inference: one kernel-queue entry each.
  EXPECT_EQ(held_group(shape(Engine::native, 1), 1000), 256);
  EXPECT_EQ(held_group(shape(Engine::native, 11), 1000), 23);
  // 64 ATen calls may be a few hundred kernels: 256 calls is no longer a safe group.
  EXPECT_EQ(held_group(shape(Engine::torch, 64), 1000), 1);
  EXPECT_EQ(held_group(shape(Engine::torch, 8), 1000), 8);
  // A package run's generated kernels are not counted as launches at all.
  EXPECT_EQ(held_group(shape(Engine::aoti, 2), 1000), 4);
}

TEST(HeldGroup, StaysBetweenOneAndTheCount) {
  EXPECT_EQ(held_group(shape(Engine::native, 1), 10), 10);
  EXPECT_EQ(held_group(shape(Engine::torch, 100000), 10), 1);
  EXPECT_EQ(held_group(shape(Engine::native, 0), 10), 10);
  EXPECT_EQ(held_group(shape(Engine::native, 1), 0), 1);
}

}  // namespace
}  // namespace condbench
