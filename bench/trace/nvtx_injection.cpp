// condbench-trace.so: an NVTX3 injection library of condbench's own, so NVTX ranges can be checked
// and seen without Nsight Systems. NVTX loads it from NVTX_INJECTION64_PATH at the process's first
// NVTX call (NVTX3's documented injection interface: the library exports InitializeInjectionNvtx2
// and fills in the callbacks it wants). It records every domain, registered string, push and pop,
// and when the process exits writes the ranges to $CONDBENCH_TRACE_OUT as Chrome trace-event JSON
// (what Perfetto and chrome://tracing open): one complete event ("ph": "X") per range, its domain
// as the category and its nesting depth in args. `condbench --trace=FILE` sets both variables; the
// tests load it the same way to check the ranges scripts/profile and docs/profiling.md promise.
//
// condbench also hands it spans it timed itself, on tracks of their own (the GPU's, from CUDA
// events): condbench_trace_span below, found with dlsym in the loaded library.
//
// Recording a range costs two clock reads and a push under a mutex. At most kMaxRanges are kept (a
// long --nvtx=iter run makes millions); the rest are counted, and the file and stderr say so.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr size_t kMaxRanges = size_t{1} << 20;

struct Range {
  const std::string* domain;
  const std::string* name;
  int64_t start_ns;
  int64_t end_ns;
  uint32_t thread;
  uint32_t depth;  // 0 for a range opened with none open on its thread and domain
};

struct Open {
  const std::string* domain;
  const std::string* name;
  int64_t start_ns;
};

// Everything the process recorded. Strings live in deques, which never move what they hold, so a
// handle given to NVTX (a domain, a registered string) stays valid for the process's life.
class Recorder {
 public:
  const std::string* domain(const char* name) { return intern(name ? name : "(null)"); }
  const std::string* intern(const std::string& text) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto [it, added] = interned_.try_emplace(text, nullptr);
    if (added) it->second = &strings_.emplace_back(text);
    return it->second;
  }

  void push(const std::string* domain, const std::string* name) { stack().push_back({domain, name, now_ns()}); }
  void pop(const std::string* domain) {
    const int64_t end = now_ns();
    std::vector<Open>& open = stack();
    // NVTX stacks are per thread and per domain: close the innermost range of this domain.
    for (size_t i = open.size(); i-- > 0;)
      if (open[i].domain == domain) {
        uint32_t depth = 0;
        for (size_t j = 0; j < i; ++j) depth += open[j].domain == domain ? 1 : 0;
        const Range range{domain, open[i].name, open[i].start_ns, end, thread_index(), depth};
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
        const std::lock_guard<std::mutex> lock(mutex_);
        if (ranges_.size() < kMaxRanges)
          ranges_.push_back(range);
        else
          ++dropped_;
        return;
      }
    const std::lock_guard<std::mutex> lock(mutex_);
    ++unmatched_pops_;
  }

  // A range timed elsewhere, on its own track (a GPU stream): depth 0, its own thread id.
  void span(const std::string& track, const std::string* name, int64_t start_ns, int64_t end_ns) {
    const std::string* domain = intern("condbench");
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto track_id = tracks_.try_emplace(track, kFirstTrack + static_cast<uint32_t>(tracks_.size())).first->second;
    if (ranges_.size() < kMaxRanges)
      ranges_.push_back({domain, name, start_ns, end_ns, track_id, 0});
    else
      ++dropped_;
  }

  // Writes the trace beside its target and renames it into place, so a reader never sees half a file.
  // False (said on stderr, with the cause) when it could not.
  bool write(const char* path) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::string temp = std::string(path) + ".tmp" + std::to_string(getpid());
    FILE* out = std::fopen(temp.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "condbench-trace: cannot write %s (%s)\n", path, std::strerror(errno));
      return false;
    }
    std::fprintf(out,
                 "{\"displayTimeUnit\": \"ns\",\n \"otherData\": {\"ranges\": %zu, \"dropped\": %zu, "
                 "\"unmatched_pops\": %zu},\n \"traceEvents\": [\n",
                 ranges_.size(), dropped_, unmatched_pops_);
    std::fprintf(out, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"condbench\"}}",
                 static_cast<int>(getpid()));
    for (const auto& [track, tid] : tracks_)
      std::fprintf(out,
                   ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %" PRIu32
                   ", \"args\": {\"name\": \"%s\"}}",
                   static_cast<int>(getpid()), tid, json_text(track).c_str());
    for (const Range& r : ranges_) {
      std::fprintf(out,
                   ",\n  {\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %" PRIu32
                   ", \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"depth\": %" PRIu32 "}}",
                   json_text(*r.domain).c_str(), json_text(*r.name).c_str(), static_cast<int>(getpid()), r.thread,
                   static_cast<double>(r.start_ns - origin_ns_) / 1e3, static_cast<double>(r.end_ns - r.start_ns) / 1e3,
                   r.depth);
    }
    std::fprintf(out, "\n]}\n");
    const bool written = std::fflush(out) == 0 && std::ferror(out) == 0;
    const int error = written ? 0 : errno;
    if (std::fclose(out) != 0 || !written || std::rename(temp.c_str(), path) != 0) {
      std::fprintf(stderr, "condbench-trace: cannot write %s (%s)\n", path, std::strerror(error != 0 ? error : errno));
      std::remove(temp.c_str());
      return false;
    }
    if (dropped_ > 0)
      std::fprintf(stderr, "condbench-trace: kept the first %zu ranges and dropped %zu; trace a shorter run\n",
                   ranges_.size(), dropped_);
    return true;
  }

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static std::vector<Open>& stack() {
    thread_local std::vector<Open> open;
    return open;
  }
  uint32_t thread_index() {
    thread_local uint32_t index = next_thread_++;
    return index;
  }
  static std::string json_text(const std::string& text) {
    std::string out;
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += escaped;
      } else {
        out += c;
      }
    }
    return out;
  }

  const int64_t origin_ns_ = now_ns();  // the trace's time 0: when NVTX loaded the library
  std::mutex mutex_;
  std::deque<std::string> strings_;
  std::map<std::string, const std::string*> interned_;
  static constexpr uint32_t kFirstTrack = 1000;  // thread ids of the spans' tracks
  std::map<std::string, uint32_t> tracks_;
  std::vector<Range> ranges_;
  size_t dropped_ = 0, unmatched_pops_ = 0;
  std::atomic<uint32_t> next_thread_{0};
};

Recorder& recorder() {
  static Recorder* instance = new Recorder;  // never destroyed: NVTX may call in during exit
  return *instance;
}

const std::string* default_domain() {
  static const std::string* domain = recorder().domain("(default)");
  return domain;
}

const std::string* message_of(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return recorder().intern("(no attributes)");
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return recorder().intern(attributes->message.ascii ? attributes->message.ascii : "(null)");
    case NVTX_MESSAGE_TYPE_REGISTERED:
      // the handle is what DomainRegisterStringA returned: one of the recorder's strings
      return attributes->message.registered ? reinterpret_cast<const std::string*>(attributes->message.registered)
                                            : recorder().intern("(null)");
    default:
      return recorder().intern("(unsupported message type)");
  }
}

const std::string* domain_of(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<const std::string*>(domain) : default_domain();
}

// The callbacks, with NVTX's signatures.
nvtxDomainHandle_t domain_create(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<std::string*>(recorder().domain(name)));
}
void domain_destroy(nvtxDomainHandle_t /*domain*/) {}
nvtxStringHandle_t domain_register_string(nvtxDomainHandle_t /*domain*/, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(recorder().intern(text ? text : "(null)")));
}
int domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  recorder().push(domain_of(domain), message_of(attributes));
  return 0;
}
int domain_pop(nvtxDomainHandle_t domain) {
  recorder().pop(domain_of(domain));
  return 0;
}
int push_ascii(const char* message) {
  recorder().push(default_domain(), recorder().intern(message ? message : "(null)"));
  return 0;
}
int push_ex(const nvtxEventAttributes_t* attributes) {
  recorder().push(default_domain(), message_of(attributes));
  return 0;
}
int pop_default() {
  recorder().pop(default_domain());
  return 0;
}

template <typename Function>
bool assign(NvtxFunctionTable table, unsigned int size, unsigned int id, Function function) {
  if (table == nullptr || id >= size || table[id] == nullptr) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
  return true;
}

// A trace asked for and not written is a failed run, not a success: the process ends with exit
// code 1 (after flushing what it printed), whatever it was about to return.
void write_at_exit() {
  const char* path = std::getenv("CONDBENCH_TRACE_OUT");
  if (path == nullptr || *path == '\0' || recorder().write(path)) return;
  std::fflush(nullptr);
  std::_Exit(1);
}

// The trace is written when the process exits, whichever entry point came first.
void write_when_exiting() {
  static const bool registered = std::atexit(write_at_exit) == 0;
  (void)registered;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (get_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0)
    return 0;
  const bool ok = assign(core, core_size, NVTX_CBID_CORE_RangePushA, &push_ascii) &&
                  assign(core, core_size, NVTX_CBID_CORE_RangePushEx, &push_ex) &&
                  assign(core, core_size, NVTX_CBID_CORE_RangePop, &pop_default) &&
                  assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create) &&
                  assign(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy) &&
                  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &domain_register_string) &&
                  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push) &&
                  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  if (!ok) return 0;
  recorder();
  write_when_exiting();
  return 1;
}

// A span condbench timed itself (a GPU inference between two CUDA events), on the track named
// `track`: start and end in nanoseconds of std::chrono::steady_clock, the clock of every range.
extern "C" __attribute__((visibility("default"))) void condbench_trace_span(const char* track, const char* name,
                                                                            int64_t start_ns, int64_t end_ns) {
  if (track == nullptr || name == nullptr || end_ns < start_ns) return;
  write_when_exiting();
  recorder().span(track, recorder().intern(name), start_ns, end_ns);
}
