// The folder AOTInductor's loaders extract into: see aoti_loader.h.
#include "condbench/aoti_loader.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>

namespace condbench {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "condbench-aoti-";
constexpr const char* kLock = ".lock";
// A folder with no lock this old is one whose process died before it locked it (it locks it at once).
constexpr auto kUnlockedAge = std::chrono::minutes(10);

void remove_quietly(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);  // gone already, or not ours after all: nothing to report
}

// Whether `folder` is a folder of this user's, not a link.
bool own_folder(const fs::path& folder) {
  struct stat st {};
  return ::lstat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

// A process's folder whose lock is free, or that was never locked long ago: its process is gone.
// The lock is opened without blocking and must be this user's regular file (a FIFO named .lock
// would block an open, another user's lock is not ours to judge).
bool abandoned(const fs::path& folder) {
  const int lock = ::open((folder / kLock).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (lock < 0) {
    const bool none = errno == ENOENT;
    std::error_code ec;
    const auto changed = fs::last_write_time(folder, ec);
    return none && !ec && fs::file_time_type::clock::now() - changed > kUnlockedAge;
  }
  struct stat st {};
  const bool free = ::fstat(lock, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                    ::flock(lock, LOCK_EX | LOCK_NB) == 0;
  ::close(lock);
  return free;
}

class ExtractionFolder {
 public:
  static const ExtractionFolder& get() {
    static const auto& folder = *new ExtractionFolder();  // never destroyed: atexit removes the folder
    return folder;
  }
  const fs::path& path() const { return path_; }

 private:
  ExtractionFolder() {
    std::error_code ec;
    const fs::path temp = fs::temp_directory_path(ec);
    if (ec) return;
    for (const fs::directory_entry& entry : fs::directory_iterator(temp, ec))
      if (entry.path().filename().string().starts_with(kPrefix) && own_folder(entry.path()) && abandoned(entry.path()))
        remove_quietly(entry.path());
    std::string name = (temp / (std::string(kPrefix) + "XXXXXX")).string();
    if (::mkdtemp(name.data()) == nullptr) return;
    // Locked under another name, then renamed: no other process ever sees this folder's .lock free.
    const fs::path locking = fs::path(name) / ".lock.new";
    const int lock = ::open(locking.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0 || ::rename(locking.c_str(), (fs::path(name) / kLock).c_str()) != 0) {
      remove_quietly(name);
      return;
    }
    path_ = name;  // the lock is held until the process ends: its descriptor is never closed
    static const bool removed_at_exit = std::atexit([] { remove_quietly(get().path_); }) == 0;
    (void)removed_at_exit;
  }

  fs::path path_;
};

}  // namespace

std::unique_ptr<torch::inductor::AOTIModelPackageLoader> make_aoti_loader(const std::string& path,
                                                                          c10::DeviceIndex device_index) {
  static std::mutex making;
  const std::lock_guard<std::mutex> lock(making);
  const auto make = [&] {
    return std::make_unique<torch::inductor::AOTIModelPackageLoader>(path, "model", /*run_single_threaded=*/true,
                                                                     /*num_runners=*/1, device_index);
  };
  const fs::path& folder = ExtractionFolder::get().path();
  if (folder.empty()) return make();  // no folder of its own: AOTInductor's own place
  std::optional<std::string> saved;
  if (const char* was = std::getenv("TMPDIR")) saved = was;
  ::setenv("TMPDIR", folder.c_str(), 1);
  struct Restore {
    const std::optional<std::string>& saved;
    ~Restore() { saved ? ::setenv("TMPDIR", saved->c_str(), 1) : ::unsetenv("TMPDIR"); }
  } restore{saved};
  return make();
}

}  // namespace condbench
