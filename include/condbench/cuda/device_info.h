#pragma once
// What the JSON context says about the GPU side (docs/design.md §4).
#include <string>

namespace condbench::cuda {

struct DeviceInfo {
  std::string device_name = "none";
  std::string runtime_version = "none";
  std::string driver_version = "none";
};

// Never throws: a machine without a driver or a GPU reports "none" where it has nothing.
DeviceInfo device_info();

}  // namespace condbench::cuda
