#include "condbench/output_file.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "condbench/error.h"

namespace condbench {

namespace {

namespace fs = std::filesystem;

// The handler may only touch what is async-signal-safe: fixed buffers and lock-free atomics.
enum SlotState : int { kFree = 0, kFile = 1, kDirectory = 2, kWriting = 3 };
constexpr int kSlots = 16;
struct Slot {
  std::atomic<int> state{kFree};
  char path[4096];
};
Slot g_slots[kSlots];
std::atomic<int> g_interrupted{0};

int claim(const std::string& path, int kind) {
  if (path.size() >= sizeof(Slot::path)) fail("'" + path + "': path too long");
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kWriting)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kind);
      return i;
    }
  }
  return -1;  // more outputs at once than slots: still removed on unwinding, not by the handler
}

void free_slot(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree);
}

extern "C" void on_signal(int signal) {
  bool directory = false;
  for (Slot& s : g_slots) directory = directory || s.state.load() == kDirectory;
  if (directory && g_interrupted.exchange(signal) == 0) return;  // the owner unwinds and removes it
  for (Slot& s : g_slots)
    if (s.state.load() == kFile) ::unlink(s.path);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

std::string temp_name(const std::string& target) { return target + ".tmp-" + std::to_string(::getpid()); }

}  // namespace

void install_signal_cleanup() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a wait for a child returns EINTR, so the owner can react
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
    return true;
  }();
  (void)installed;
}

int interrupted() { return g_interrupted.load(); }

void throw_if_interrupted() {
  if (const int signal = interrupted()) throw Interrupted(signal);
}

void reraise(int signal) {
  ::signal(signal, SIG_DFL);
  ::raise(signal);
  std::_Exit(128 + signal);
}

PendingFile::PendingFile(std::string target) : target_(std::move(target)), temp_(temp_name(target_)) {
  slot_ = claim(temp_, kFile);
}

PendingFile::~PendingFile() {
  if (temp_.empty()) return;
  free_slot(slot_);
  std::remove(temp_.c_str());
}

void PendingFile::commit() {
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    const std::string reason = std::strerror(errno), kept = temp_;
    free_slot(slot_);
    temp_.clear();  // keep it: it holds the finished output
    fail("cannot rename the output into '" + target_ + "' (" + reason + "); it is kept in '" + kept + "'");
  }
  free_slot(slot_);
  temp_.clear();
}

PendingDirectory::PendingDirectory(std::string target) : temp_(temp_name(target)) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(temp_, ec)))
    fail("'" + temp_ + "' is in the way (a temporary left by an earlier run?); remove it");
  if (!fs::create_directory(temp_, ec)) fail("cannot create '" + temp_ + "': " + ec.message());
  slot_ = claim(temp_, kDirectory);
}

PendingDirectory::~PendingDirectory() {
  free_slot(slot_);
  if (temp_.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

void PendingDirectory::release() {
  free_slot(slot_);
  slot_ = -1;
  temp_.clear();
}

}  // namespace condbench
