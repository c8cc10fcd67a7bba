#include "model_file_compile.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "condbench/error.h"

extern char** environ;

namespace condbench {

namespace fs = std::filesystem;

namespace {

constexpr size_t kKeptOutput = 64 * 1024;  // of each stream: the last lines are what is read

bool python_file(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0; }

// Where model_file.py and its environment are looked for: the sources this condbench was built from,
// then the tree it runs in (the working folder: a bundle built elsewhere and carried to another
// machine, as scripts/device-check does, finds the checkout it runs from).
std::vector<fs::path> source_trees() {
  std::error_code ec;
  std::vector<fs::path> trees = {fs::path(CONDBENCH_SOURCE_DIR)};
  if (fs::path here = fs::current_path(ec); !ec) trees.push_back(std::move(here));
  return trees;
}

// The interpreter that runs model_file.py: $CONDBENCH_PYTHON, else the environment scripts/setup
// made in one of the source trees, else python3 on the PATH.
std::string python() {
  if (const char* given = std::getenv("CONDBENCH_PYTHON"); given != nullptr && *given != '\0') return given;
  for (const fs::path& tree : source_trees()) {
    const fs::path venv = tree / ".venv" / "bin" / "python";
    if (access(venv.c_str(), X_OK) == 0) return venv.string();
  }
  return "python3";
}

// bench/python/model_file.py in the first source tree that has it, or "" in none.
std::string model_file_script() {
  std::error_code ec;
  for (const fs::path& tree : source_trees())
    if (const fs::path script = tree / "bench" / "python" / "model_file.py"; fs::is_regular_file(script, ec))
      return script.string();
  return "";
}

// The last non-empty line of `text`.
std::string last_line(const std::string& text) {
  const size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.rfind('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end - begin + 1);
}

// A pipe's two ends, closed when it goes.
struct Pipe {
  std::array<int, 2> fd{-1, -1};
  Pipe() {
    if (pipe2(fd.data(), O_CLOEXEC) != 0) fail("--model-file: cannot make a pipe to model_file.py");
  }
  ~Pipe() {
    for (const int f : fd)
      if (f >= 0) close(f);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_write() {
    close(fd[1]);
    fd[1] = -1;
  }
};

struct Ran {
  int status = 0;
  std::string out, err;  // the last kKeptOutput bytes of each
};

// Runs `argv` (no shell) to its end, its stdout and stderr read as they come.
Ran run(const std::vector<std::string>& argv) {
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) fail("--model-file: cannot run " + argv[0] + ": " + std::strerror(spawned));
  out.close_write();
  err.close_write();
  Ran ran;
  std::array<pollfd, 2> fds{{{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}}};
  std::array<std::string*, 2> into{&ran.out, &ran.err};
  std::array<char, 4096> buffer{};
  for (int open = 2; open > 0;) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        into[i]->append(buffer.data(), static_cast<size_t>(n));
        if (into[i]->size() > 2 * kKeptOutput) into[i]->erase(0, into[i]->size() - kKeptOutput);
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // ended (poll skips a negative descriptor)
        --open;
      }
    }
  }
  while (waitpid(pid, &ran.status, 0) < 0 && errno == EINTR) {
  }
  return ran;
}

}  // namespace

Device model_file_device(const std::vector<Device>& devices) {
  const bool cuda = std::find(devices.begin(), devices.end(), Device::cuda) != devices.end();
  return cuda && cli::cuda_available() ? Device::cuda : Device::cpu;
}

std::string model_file_folder(const std::string& given, const std::string& weights, Device device) {
  if (!python_file(given)) {
    if (!weights.empty())
      fail("--model-weights: only with --model-file=FILE.py (a compiled folder's weights are in its packages)");
    return given;
  }
  std::error_code ec;
  if (!fs::is_regular_file(given, ec)) fail("--model-file: " + given + ": no such file");
  const std::string script = model_file_script();
  if (script.empty())
    fail("--model-file: " + given + ": bench/python/model_file.py is neither beside this condbench's sources nor " +
         "in the working folder; run from a checkout, or compile it there (model_file.py compile " + given +
         " --device " + to_string(device) + ") and give the folder");
  std::vector<std::string> argv = {python(), script, "compile", given, "--device", to_string(device)};
  if (!weights.empty()) argv.insert(argv.end(), {"--weights", weights});
  if (isatty(STDERR_FILENO))  // a compile takes minutes the first time
    std::cerr << "condbench: compiling " << given << " for " << to_string(device)
              << " (bench/python/model_file.py; cached)\n";
  const Ran ran = run(argv);
  if (WIFEXITED(ran.status) && WEXITSTATUS(ran.status) == 0 && !last_line(ran.out).empty()) return last_line(ran.out);
  // model_file.py's one line names the file and the part: "model_file: x.py: stages[1]: ..."
  std::string said = last_line(ran.err);
  if (said.rfind("model_file: ", 0) == 0) fail("--model-file: " + printable(said.substr(12), 400));
  const std::string how = WIFSIGNALED(ran.status) ? "was stopped by signal " + std::to_string(WTERMSIG(ran.status))
                                                  : "failed (exit " + std::to_string(WEXITSTATUS(ran.status)) + ")";
  fail("--model-file: " + given + ": model_file.py compile " + how + (said.empty() ? "" : ": " + printable(said, 400)));
}

}  // namespace condbench
