#pragma once
// GPU tests run where a CUDA device is present and skip with the reason everywhere else.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#define skip_without_gpu()                                                \
  do {                                                                    \
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device on this machine"; \
  } while (0)
