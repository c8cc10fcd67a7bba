#include "condbench/cuda/device_info.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

namespace condbench::cuda {

namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// An attribute of device 0, or "unknown"; `scale` divides it (kHz -> MHz).
std::string attribute(cudaDeviceAttr which, int scale = 1) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, which, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return "unknown";
  }
  return std::to_string(value / scale);
}

// NVML, the driver's management library, opened at run time (the toolkit here has no nvml.h, and a
// machine without the driver has no library): its C entry points as its documentation declares them.
// Success is 0; clock 1 is the SM clock; temperature sensor 0 is the GPU's.
class Nvml {
 public:
  Nvml() : library_(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    if (!library_) return;
    init_ = reinterpret_cast<int (*)()>(dlsym(library_, "nvmlInit_v2"));
    shutdown_ = reinterpret_cast<int (*)()>(dlsym(library_, "nvmlShutdown"));
    handle_ = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(library_, "nvmlDeviceGetHandleByIndex_v2"));
    if (!init_ || !shutdown_ || !handle_ || init_() != 0) return;
    ready_ = handle_(0, &device_) == 0;
  }
  ~Nvml() {
    if (ready_) shutdown_();
    if (library_) dlclose(library_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // `function`(device, args..., &value) as text, or "unknown".
  template <typename... Args>
  std::string read(const char* function, Args... args) const {
    if (!ready_) return "unknown";
    const auto call = reinterpret_cast<int (*)(void*, Args..., unsigned*)>(dlsym(library_, function));
    unsigned value = 0;
    return call && call(device_, args..., &value) == 0 ? std::to_string(value) : "unknown";
  }

 private:
  void* library_ = nullptr;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*handle_)(unsigned, void**) = nullptr;
  void* device_ = nullptr;
  bool ready_ = false;
};

}  // namespace

DeviceInfo device_info() {
  DeviceInfo info;
  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess && version > 0) info.runtime_version = version_text(version);
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) info.driver_version = version_text(version);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // clear the sticky "no device" error for later calls
    return info;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess) info.device_name = properties.name;
  const std::string ecc = attribute(cudaDevAttrEccEnabled);
  info.state = {
      {"gpu_sm_count", attribute(cudaDevAttrMultiProcessorCount)},
      {"gpu_compute_capability",
       attribute(cudaDevAttrComputeCapabilityMajor) + "." + attribute(cudaDevAttrComputeCapabilityMinor)},
      {"gpu_sm_clock_peak_mhz", attribute(cudaDevAttrClockRate, 1000)},
      {"gpu_memory_clock_peak_mhz", attribute(cudaDevAttrMemoryClockRate, 1000)},
      {"gpu_ecc", ecc == "unknown" ? ecc
                  : ecc == "0"     ? "off"
                                   : "on"},
  };
  const Nvml nvml;
  const std::string persistence = nvml.read("nvmlDeviceGetPersistenceMode");
  info.state.emplace_back("gpu_persistence_mode", persistence == "unknown" ? persistence
                                                  : persistence == "0"     ? "off"
                                                                           : "on");
  info.state.emplace_back("gpu_sm_clock_mhz", nvml.read("nvmlDeviceGetClockInfo", 1u));
  info.state.emplace_back("gpu_temperature_c", nvml.read("nvmlDeviceGetTemperature", 0u));
  info.state.emplace_back("gpu_power_limit_mw", nvml.read("nvmlDeviceGetPowerManagementLimit"));
  return info;
}

}  // namespace condbench::cuda
