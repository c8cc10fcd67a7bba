#pragma once
// Outputs are written beside their target under a temporary name and renamed into place, so a
// reader never sees half a file, and a run that stops leaves nothing behind: the temporary is
// removed when its owner unwinds and, for files, by the SIGINT/SIGTERM/SIGHUP handler too. When
// the final rename fails the output is kept under its temporary name, and the error says where.
#include <exception>
#include <string>
#include <string_view>
#include <vector>

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

// The output policy of every condbench tool (docs/input.md), checked before any
// work starts, for all of a command's outputs at once:
//   - an output file is absent or a regular file; an output folder is absent or a folder. A symbolic
//     link, a device, a FIFO or a socket is refused, never followed or replaced;
//   - its folder exists and is writable;
//   - no two outputs name one file (by path, or by identity: a hard link is the same file);
//   - no output names an input, no output folder holds one, and no output lies inside an input folder.
// Throws condbench::Error naming the flag and the path: "--checkpoint-out: '/x' is a FIFO; ...".
struct OutputPath {
  std::string flag;  // "--benchmark_out"
  std::string path;
  bool folder = false;  // a folder the tool fills (--export-workload, condbench-report --out)
};
struct InputPath {
  std::string flag;  // "--weights"
  std::string path;
  bool folder = false;  // a folder read whole (a compiled model file): no output may lie inside it
};
void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<InputPath>& inputs);
// `path` lies inside `folder` (or is it), both made absolute and resolved as far as they exist.
bool path_inside(const std::string& path, const std::string& folder);
// What is at `path`, in words, when it is not a regular file or a folder ("a symbolic link", "a FIFO",
// "a device", "a socket"); "" otherwise, and when nothing is there.
std::string special_file_kind(const std::string& path);

// A file being written: `temp_path()` is TARGET.tmp-PID-N, unique to this writer; commit() flushes it
// to disk and renames it to TARGET, refusing a TARGET that has become something other than a regular
// file meanwhile. Destroyed without commit, it removes the temporary. Move-only bookkeeping, so no copy.
class PendingFile {
 public:
  explicit PendingFile(std::string target);
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  ~PendingFile();
  const std::string& temp_path() const { return temp_; }
  const std::string& target() const { return target_; }
  // Writes `text` to the temporary, whole. Throws condbench::Error naming the target and the cause
  // ("cannot write 'out.json' (No space left on device)"), the temporary already removed.
  void write(std::string_view text);
  // Throws condbench::Error when the rename fails or is refused, naming the temporary where the output
  // was kept (it was: a temporary that vanished is said to be lost).
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
