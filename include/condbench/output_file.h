#pragma once
// Outputs are written beside their target under a temporary name and renamed into place, so a
// reader never sees half a file, and a run that stops leaves nothing behind: the temporary is
// removed when its owner unwinds and, for files, by the SIGINT/SIGTERM/SIGHUP handler too. When
// the final rename fails the output is kept under its temporary name, and the error says where.
#include <exception>
#include <string>

namespace condbench {

// Installs the handler (once). On a signal it removes every pending temporary file, then dies of
// the signal as it would have. While a pending directory exists it cannot remove a tree safely
// inside a handler, so it only records the signal (see interrupted()) and the owner unwinds; a
// second signal ends the process at once.
void install_signal_cleanup();

// The signal that arrived while a pending directory existed, or 0.
int interrupted();

// Thrown by throw_if_interrupted(): main catches it after the temporaries are gone and re-raises
// the signal, so the exit status says what happened (130 for Ctrl-C).
class Interrupted : public std::exception {
 public:
  explicit Interrupted(int signal) : signal_(signal) {}
  int signal() const { return signal_; }
  const char* what() const noexcept override { return "interrupted"; }

 private:
  int signal_;
};
void throw_if_interrupted();
// Dies of `signal` with its default action (for main, after unwinding).
[[noreturn]] void reraise(int signal);

// A file being written: `temp_path()` is TARGET.tmp-PID; commit() renames it to TARGET. Destroyed
// without commit, it removes the temporary. Move-only bookkeeping, so no copy.
class PendingFile {
 public:
  explicit PendingFile(std::string target);
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  ~PendingFile();
  const std::string& temp_path() const { return temp_; }
  const std::string& target() const { return target_; }
  // Throws condbench::Error naming the temporary where the output was kept when the rename fails.
  void commit();

 private:
  std::string target_, temp_;
  int slot_ = -1;
};

// A directory being built: TARGET.tmp-PID, created empty (refused if something is there).
// Destroyed without release(), it removes the tree.
class PendingDirectory {
 public:
  explicit PendingDirectory(std::string target);
  PendingDirectory(const PendingDirectory&) = delete;
  PendingDirectory& operator=(const PendingDirectory&) = delete;
  ~PendingDirectory();
  const std::string& temp_path() const { return temp_; }
  // The caller has moved the tree into place (or kept it on purpose): nothing to remove.
  void release();

 private:
  std::string temp_;
  int slot_ = -1;
};

}  // namespace condbench
