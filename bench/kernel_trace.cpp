#include "kernel_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "condbench/error.h"

namespace condbench {

namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

}  // namespace

KernelTrace::KernelTrace(std::string path, bool cuda) : path_(std::move(path)) {
  const ProfilerConfig config(ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  running_ = true;
}

void KernelTrace::finish() {
  if (!running_) return;
  running_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  const std::string temp = path_ + ".tmp-kernel-trace";
  try {
    result->save(temp);
  } catch (const std::exception& e) {
    std::remove(temp.c_str());
    fail("--kernel-trace: cannot write " + path_ + " (" + one_line(e) + ")");
  }
  std::error_code ec;
  std::filesystem::rename(temp, path_, ec);
  if (ec) {
    std::remove(temp.c_str());
    fail("--kernel-trace: cannot write " + path_ + " (" + ec.message() + ")");
  }
}

KernelTrace::~KernelTrace() {
  if (!running_) return;
  try {
    profiler::disableProfiler();
  } catch (...) {  // a destructor that runs while an error unwinds must not throw
  }
}

}  // namespace condbench
