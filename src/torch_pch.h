// The precompiled header for every translation unit that uses LibTorch (CMakeLists.txt).
// Only the parts condbench uses, not torch/torch.h.
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
