#pragma once
// What the JSON context says about the GPU side (docs/design.md §4).
#include <string>
#include <utility>
#include <vector>

namespace condbench::cuda {

struct DeviceInfo {
  std::string device_name = "none";
  std::string runtime_version = "none";
  std::string driver_version = "none";
  // The state a GPU's figures depend on, as (context key, value): its SMs and compute capability,
  // its peak SM and memory clocks and ECC (the runtime), and where the driver's management library
  // answers (NVML, opened at run time), the SM clock now, persistence mode, temperature and power
  // limit. Empty without a GPU; "unknown" where a source does not say.
  std::vector<std::pair<std::string, std::string>> state;
};

// Never throws: a machine without a driver or a GPU reports "none" where it has nothing.
DeviceInfo device_info();

}  // namespace condbench::cuda
