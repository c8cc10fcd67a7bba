#include "condbench/cuda/device_info.h"

#include <cuda_runtime_api.h>

namespace condbench::cuda {

namespace {
std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
}  // namespace

DeviceInfo device_info() {
  DeviceInfo info;
  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess && version > 0) info.runtime_version = version_text(version);
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) info.driver_version = version_text(version);
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess) info.device_name = properties.name;
  } else {
    (void)cudaGetLastError();  // clear the sticky "no device" error for later calls
  }
  return info;
}

}  // namespace condbench::cuda
