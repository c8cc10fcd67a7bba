#include "condbench/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

std::string temp_name(const std::string& target) {
  static std::atomic<unsigned> writers{0};
  return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(writers++);
}

// Two paths name the same file: the same device and inode where both exist (a hard link, a path
// through another folder), else the same absolute path once its existing part is resolved.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ea), ea), pb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && pa == pb;
}

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

std::string special_file_kind(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "";
}

bool path_inside(const std::string& path, const std::string& folder) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(folder, ec), ec);
  if (ec) return false;
  auto pi = p.begin();
  for (auto di = d.begin(); di != d.end(); ++di, ++pi)
    if (pi == p.end() || (*pi != *di && !di->empty())) return false;
  return true;
}

void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<InputPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputPath& o = outputs[i];
    const std::string named = o.flag + ": '" + o.path + "'";
    if (o.path.empty()) fail(o.flag + ": needs a " + (o.folder ? "folder" : "file") + " name");
    if (const std::string kind = special_file_kind(o.path); !kind.empty())
      fail(named + " is " + kind + "; condbench writes only " + (o.folder ? "folders" : "regular files") +
           " and never replaces " + kind);
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(o.path, ec);
    if (fs::exists(status) && o.folder && !fs::is_directory(status)) fail(named + " exists and is not a folder");
    if (fs::exists(status) && !o.folder && !fs::is_regular_file(status))
      fail(named + " is a folder, not a regular file; name a file in it");
    const fs::path parent = fs::absolute(o.path, ec).parent_path();
    if (!ec && fs::exists(parent, ec) && !fs::is_directory(parent, ec))
      fail(named + ": '" + parent.string() + "' is not a folder");
    if (ec || !fs::is_directory(parent, ec)) fail(named + ": its folder '" + parent.string() + "' does not exist");
    if (::access(parent.c_str(), W_OK | X_OK) != 0)
      fail(named + ": its folder '" + parent.string() + "' is not writable");
    for (size_t j = 0; j < i; ++j)
      if (same_file(o.path, outputs[j].path))
        fail(outputs[j].flag + " and " + o.flag + " name the same file '" + o.path + "'; give each its own");
    for (const InputPath& in : inputs) {
      if (in.path.empty()) continue;
      if (same_file(o.path, in.path))
        fail(named + " is the input of " + in.flag + "; an output never overwrites an input");
      if (o.folder && path_inside(in.path, o.path))
        fail(named + " holds the input of " + in.flag + " ('" + in.path + "'); choose another folder");
      if (in.folder && path_inside(o.path, in.path))
        fail(named + " lies inside " + in.flag + "'s folder '" + in.path + "', which condbench reads; write elsewhere");
    }
  }
}

PendingFile::PendingFile(std::string target) : target_(std::move(target)), temp_(temp_name(target_)) {
  slot_ = claim(temp_, kFile);
}

PendingFile::~PendingFile() {
  if (temp_.empty()) return;
  free_slot(slot_);
  std::remove(temp_.c_str());
}

void PendingFile::write(std::string_view text) {
  const auto refuse = [&](int error) {
    std::remove(temp_.c_str());  // half a file helps no one, and a full disk wants its space back
    fail("cannot write '" + target_ + "' (" + std::strerror(error) + ")");
  };
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) refuse(errno);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      refuse(error);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) refuse(errno);
}

void PendingFile::commit() {
  // On disk before it takes the target's name: a crash after the rename leaves the new file whole.
  if (const int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::string refused;
  if (const std::string kind = special_file_kind(target_); !kind.empty())
    refused = "'" + target_ + "' has become " + kind + " during the run; it is never replaced";
  else if (std::error_code ec; fs::is_directory(fs::symlink_status(target_, ec)))
    refused = "'" + target_ + "' is a folder; it is never replaced";
  if (refused.empty() && std::rename(temp_.c_str(), target_.c_str()) == 0) {
    free_slot(slot_);
    temp_.clear();
    return;
  }
  if (refused.empty()) refused = "cannot rename the output into '" + target_ + "' (" + std::strerror(errno) + ")";
  const std::string kept = temp_;
  free_slot(slot_);
  temp_.clear();  // keep it: it holds the finished output
  std::error_code ec;
  fail(refused + (fs::is_regular_file(fs::symlink_status(kept, ec)) ? "; it is kept in '" + kept + "'"
                                                                    : "; it is lost ('" + kept + "' is gone)"));
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
