#pragma once
// Small helpers shared by the torch-engine strategies.
#include <c10/core/Device.h>

#include "condbench/strategy.h"

namespace condbench {

inline c10::Device torch_device(Device device) {
  return device == Device::cpu ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, 0);
}

}  // namespace condbench
