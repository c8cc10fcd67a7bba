// How many inferences gpu_us enqueues behind one hold of the stream (bench/device_timing.cpp):
// few enough that the kernels they queue stay under the stream's queue, counted in kernels, not
// in the launches counter's units (an ATen call may launch several kernels).
#include <gtest/gtest.h>

#include <algorithm>

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

TEST(HoldTimeout, GrowsWithWhatIsQueuedAndStaysFarBelowTheOldFixedTwoSeconds) {
  // one native graph: the base and one kernel; a full group of 256 kernels: about 0.06 s
  EXPECT_NEAR(hold_timeout_s(shape(Engine::native, 1), 1), 0.02 + 150e-6, 1e-12);
  EXPECT_NEAR(hold_timeout_s(shape(Engine::native, 1), 256), 0.02 + 256 * 150e-6, 1e-12);
  // weighted as held_group weighs a launch: an ATen call 4 kernels, a package run 32
  EXPECT_NEAR(hold_timeout_s(shape(Engine::torch, 8), 8), 0.02 + 8 * 8 * 4 * 150e-6, 1e-12);
  EXPECT_NEAR(hold_timeout_s(shape(Engine::aoti, 2), 4), 0.02 + 2 * 4 * 32 * 150e-6, 1e-12);
  // a group held_group makes waits at most for its 256 kernels (or one inference's, when a single
  // inference queues more)
  for (const Engine engine : {Engine::native, Engine::torch, Engine::aoti})
    for (const int64_t launches : {1, 3, 11, 64, 500}) {
      const InferenceShape s = shape(engine, launches);
      const int64_t per_inference = launches * (engine == Engine::native ? 1 : engine == Engine::torch ? 4 : 32);
      EXPECT_LE(hold_timeout_s(s, held_group(s, 1000)), 0.02 + 150e-6 * std::max<int64_t>(256, per_inference) + 1e-12)
          << launches;
      EXPECT_GT(hold_timeout_s(s, held_group(s, 1000)), 0.02);
    }
}

TEST(HeldGroup, StaysBetweenOneAndTheCount) {
  EXPECT_EQ(held_group(shape(Engine::native, 1), 10), 10);
  EXPECT_EQ(held_group(shape(Engine::torch, 100000), 10), 1);
  EXPECT_EQ(held_group(shape(Engine::native, 0), 10), 10);
  EXPECT_EQ(held_group(shape(Engine::native, 1), 0), 1);
}

}  // namespace
}  // namespace condbench
