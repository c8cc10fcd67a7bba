#include "condbench/nvtx.h"

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "condbench/error.h"

#if CONDBENCH_HAVE_NVTX
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace condbench::nvtx {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::off)};
// The attached tool's condbench_trace_span (bench/trace/nvtx_injection.cpp), or nullptr.
using SpanFunction = void (*)(const char*, const char*, int64_t, int64_t);
SpanFunction g_record_span = nullptr;

#if CONDBENCH_HAVE_NVTX
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("condbench");
  return handle;
}
#endif

// Registered strings for stages, made on first use and kept for the process's life (NVTX holds
// on to their handles). A deque never moves what it already holds.
const RegisteredString& numbered(std::deque<RegisteredString>& cache, std::mutex& mutex, const char* prefix, int n) {
  std::lock_guard<std::mutex> lock(mutex);
  while (static_cast<int>(cache.size()) <= n) cache.emplace_back((prefix + std::to_string(cache.size())).c_str());
  return cache[n];
}
}  // namespace

void set_level(Level level) { g_level.store(static_cast<int>(level)); }
Level level() { return static_cast<Level>(g_level.load()); }

Level parse_level(const std::string& text) {
  if (text == "off") return Level::off;
  if (text == "run") return Level::run;
  if (text == "iter") return Level::iter;
  if (text == "stage") return Level::stage;
  fail("--nvtx: expected off, run, iter or stage, got '" + printable(text) + "'");
}

const char* level_name(Level level) {
  switch (level) {
    case Level::off:
      return "off";
    case Level::run:
      return "run";
    case Level::iter:
      return "iter";
    case Level::stage:
      return "stage";
  }
  return "off";
}

bool ScopedRange::enabled(Level at) {
#if CONDBENCH_HAVE_NVTX
  return g_level.load(std::memory_order_relaxed) >= static_cast<int>(at);
#else
  (void)at;
  return false;
#endif
}

RegisteredString::RegisteredString(const char* text) {
#if CONDBENCH_HAVE_NVTX
  handle_ = nvtxDomainRegisterStringA(domain(), text);
#else
  (void)text;
#endif
}

const RegisteredString& inference_string() {
  static const RegisteredString s("inference");
  return s;
}

StageRanges::StageRanges(int blocks) {
  static std::deque<RegisteredString> block_strings, exit_test_strings;  // "block 0", ...; "exit test 1", ...
  static std::mutex mutex;
  for (int i = 0; i < blocks; ++i) blocks_.push_back(&numbered(block_strings, mutex, "block ", i));
  for (int k = 1; k <= blocks; ++k) exit_tests_.push_back(&numbered(exit_test_strings, mutex, "exit test ", k));
}

void attach_tool(const std::string& library, const std::vector<std::pair<std::string, std::string>>& environment) {
#if CONDBENCH_HAVE_NVTX
  const char* attached = std::getenv("NVTX_INJECTION64_PATH");
  if (attached != nullptr && *attached != '\0' && library != attached)
    fail("another NVTX tool is attached (NVTX_INJECTION64_PATH=" + printable(attached) + ")");
  for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
  nvtxInitialize(nullptr);
  // The library is loaded now (by NVTX, privately): ask it for its span entry point, if it has one.
  if (void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD))
    g_record_span = reinterpret_cast<SpanFunction>(dlsym(handle, "condbench_trace_span"));
#else
  (void)library;
  (void)environment;
  fail("this build has no NVTX (the CUDA toolkit's NVTX3 headers were not found when it was configured)");
#endif
}

bool records_spans() { return g_record_span != nullptr; }

void record_span(const char* track, const char* name, int64_t start_ns, int64_t end_ns) {
  if (g_record_span != nullptr) g_record_span(track, name, start_ns, end_ns);
}

void push(const RegisteredString& message) {
#if CONDBENCH_HAVE_NVTX
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = static_cast<nvtxStringHandle_t>(const_cast<void*>(message.handle()));
  nvtxDomainRangePushEx(domain(), &attributes);
#else
  (void)message;
#endif
}

void push(const std::string& message) {
#if CONDBENCH_HAVE_NVTX
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message.c_str();
  nvtxDomainRangePushEx(domain(), &attributes);
#else
  (void)message;
#endif
}

void pop() {
#if CONDBENCH_HAVE_NVTX
  nvtxDomainRangePop(domain());
#endif
}

}  // namespace condbench::nvtx
