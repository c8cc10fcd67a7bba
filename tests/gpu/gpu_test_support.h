#pragma once
// GPU tests run where a CUDA device is present and skip with the reason everywhere else — unless
// CONDBENCH_REQUIRE_GPU=1 (scripts/device-check on the GPU machine): there a test that cannot see the
// GPU fails, so a bundle that loads but cannot reach CUDA (a runtime the driver refuses) never reads
// as "ok".
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

inline bool gpu_required() {
  const char* value = std::getenv("CONDBENCH_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

#define skip_without_gpu()                                                                                    \
  do {                                                                                                        \
    if (!at::hasCUDA()) {                                                                                     \
      if (gpu_required()) FAIL() << "CONDBENCH_REQUIRE_GPU=1, but no CUDA device is visible to this process"; \
      GTEST_SKIP() << "no CUDA device on this machine";                                                       \
    }                                                                                                         \
  } while (0)
