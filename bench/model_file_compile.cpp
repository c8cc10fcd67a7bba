#include "model_file_compile.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "condbench/error.h"
#include "condbench/input_file.h"
#include "condbench/model_file.h"
#include "condbench/output_file.h"

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

// The folder that holds the condbench Python package (python/ of the first source tree whose
// python/condbench/model_file.py is there), or "" in none: the compile's PYTHONPATH, so that it runs
// this tree's package whatever the environment has installed.
std::string package_root() {
  std::error_code ec;
  for (const fs::path& tree : source_trees())
    if (fs::is_regular_file(tree / "python" / "condbench" / "model_file.py", ec)) return (tree / "python").string();
  return "";
}

// This process's environment with `root` first on PYTHONPATH, as "NAME=value" strings; and
// PYTHONSAFEPATH, or python -m would put the working folder first on sys.path.
std::vector<std::string> environment_with_package(const std::string& root) {
  constexpr std::string_view kPath = "PYTHONPATH=", kSafe = "PYTHONSAFEPATH=", kParent = "CONDBENCH_COMPILE_PARENT=";
  std::vector<std::string> env;
  std::string path(kPath);
  path += root;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with(kPath)) {
      if (text.size() > kPath.size()) path.append(":").append(text.substr(kPath.size()));
    } else if (!text.starts_with(kSafe) && !text.starts_with(kParent)) {
      env.emplace_back(text);
    }
  }
  env.push_back(std::move(path));
  env.emplace_back("PYTHONSAFEPATH=1");
  // Who runs the compile, in a process group of its own: model_file.py then ends with it, even when
  // it is killed outright (SIGKILL leaves it no time to end the group), and takes the group along.
  env.push_back(std::string(kParent) + std::to_string(getpid()));
  return env;
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
  bool timed_out = false;
  std::string out, err, answer;  // the last kKeptOutput bytes of each
};

// The descriptor model_file.py writes its answer on (--answer-fd): a channel of condbench's own, so
// that nothing the user's code prints on stdout can pass for the compiled folder.
constexpr int kAnswerFd = 3;

// SIGINT, SIGTERM and SIGHUP, while a compile runs, only recorded: the compile's process group is
// not the terminal's, so this process ends it, then dies of the signal as it would have.
constexpr std::array<int, 3> kStopSignals{SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t arrived = 0;
extern "C" void record_signal(int signal) { arrived = signal; }

class SignalsRecorded {
 public:
  SignalsRecorded() {
    struct sigaction record {};
    record.sa_handler = record_signal;
    sigemptyset(&record.sa_mask);
    for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &record, &previous_[i]);
  }
  ~SignalsRecorded() {
    for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &previous_[i], nullptr);
  }
  SignalsRecorded(const SignalsRecorded&) = delete;
  SignalsRecorded& operator=(const SignalsRecorded&) = delete;

 private:
  std::array<struct sigaction, kStopSignals.size()> previous_{};
};

// Ends the process group `pid` leads: SIGTERM, then SIGKILL what is left after 5 s; reaps `pid`.
void end_group(pid_t pid, int& status) {
  kill(-pid, SIGTERM);
  for (int waited = 0; waited < 50; ++waited) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      kill(-pid, SIGKILL);  // its children, if any outlived it
      return;
    }
    usleep(100 * 1000);
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Whether `pid` has exited, without reaping it: while it is unreaped its process group keeps its id.
bool exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// After the group's leader exited (still unreaped): what the user's code started and left running
// (a server, a detached child) is ended with it. Returns true.
bool ended_with_its_group(pid_t pid) {
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);
  return true;
}

// Runs `argv` (no shell) with the environment `env` in a process group of its own to its end, or to `timeout_s`, its
// stdout, stderr and kAnswerFd read as they come; every 30 s says on stderr how long `what` has taken.
Ran run(const std::vector<std::string>& argv, const std::vector<std::string>& env, int timeout_s,
        const std::string& what) {
  Pipe out, err, answer;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, answer.fd[1], kAnswerFd);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group, led by it: ended whole
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int s : kStopSignals) sigaddset(&defaults, s);  // the child keeps none of our handlers
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const SignalsRecorded recorded;
  arrived = 0;
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) fail("--model-file: cannot run " + argv[0] + ": " + std::strerror(spawned));
  out.close_write();
  err.close_write();
  answer.close_write();
  Ran ran;
  std::array<pollfd, 3> fds{{{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}, {answer.fd[0], POLLIN, 0}}};
  std::array<std::string*, 3> into{&ran.out, &ran.err, &ran.answer};
  std::array<char, 4096> buffer{};
  const auto started = std::chrono::steady_clock::now();
  int said = 0;        // progress lines so far
  bool ended = false;  // the compile exited, and what it left running was ended with it
  for (int open = 3; open > 0;) {
    const int ready = poll(fds.data(), fds.size(), 1000);
    // Ended while something it started still holds the pipes: that goes now, and they close.
    if (!ended && exited(pid)) ended = ended_with_its_group(pid);
    const int poll_error = ready < 0 ? errno : 0;  // before anything below can change errno
    if (arrived != 0) {                            // the user stopped condbench: the compile goes with it
      end_group(pid, ran.status);
      reraise(arrived);
    }
    const auto seconds = static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
    if (seconds >= timeout_s) {
      end_group(pid, ran.status);
      ran.timed_out = true;
      return ran;
    }
    if (seconds >= 30 * (said + 1)) {
      said = seconds / 30;
      std::cerr << "condbench: compiling " << what << ": " << seconds << " s so far (--compile-timeout=" << timeout_s
                << ")\n";
    }
    if (ready < 0) {
      if (poll_error == EINTR) continue;
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
  if (!ended) ended_with_its_group(pid);
  while (waitpid(pid, &ran.status, 0) < 0 && errno == EINTR) {
  }
  return ran;
}

// The folder model_file.py answered is the file that was given: its manifest names the file's and
// the weights' real paths (model_file.py's key holds them), and the folder is named by its digest.
void check_compiled_from(const std::string& folder, const std::string& given, const std::string& weights) {
  std::error_code ec;
  const auto real = [&ec](const std::string& path) { return path.empty() ? "" : fs::canonical(path, ec).string(); };
  const ModelFileManifest m = read_manifest(folder);
  const std::string name = fs::path(folder).filename().string();
  if (m.source != real(given) || m.weights != real(weights) || name.rfind(m.digest + "-", 0) != 0)
    fail("--model-file: " + given + ": model_file.py answered " + printable(folder, 400) +
         ", which was not compiled from it (its manifest names " + printable(m.source, 200) + ")");
}

}  // namespace

int compile_timeout(const std::map<std::string, std::string>& flags) {
  const auto given = flags.find("--compile-timeout");
  if (given == flags.end()) return kDefaultCompileTimeout;
  return static_cast<int>(cli::parse_int("--compile-timeout", given->second, 1, 86400));
}

Device model_file_device(const std::vector<Device>& devices) {
  const bool cuda = std::find(devices.begin(), devices.end(), Device::cuda) != devices.end();
  return cuda && cli::cuda_available() ? Device::cuda : Device::cpu;
}

std::string model_file_folder(const std::string& given, const std::string& weights, Device device,
                              int64_t max_row_values, int timeout_s) {
  if (!python_file(given)) {
    if (!weights.empty())
      fail("--model-weights: only with --model-file=FILE.py (a compiled folder's weights are in its packages)");
    return given;
  }
  std::error_code ec;
  if (!fs::exists(given, ec)) fail("--model-file: " + given + ": no such file");
  if (const std::string kind = non_regular_kind(given); !kind.empty())  // a link: what it leads to
    fail("--model-file: " + given + ": not a regular file (" + kind + ")");
  const std::string package = package_root();
  if (package.empty())
    fail("--model-file: " + given + ": python/condbench/model_file.py is neither beside this condbench's sources nor " +
         "in the working folder; run from a checkout, or compile it there (.venv/bin/python -m condbench.model_file "
         "compile " +
         given + " --device " + to_string(device) + ") and give the folder");
  // condbench's limits, as data: model_file.py types none of them
  std::vector<std::string> argv = {python(),
                                   "-m",
                                   "condbench.model_file",
                                   "compile",
                                   given,
                                   "--device",
                                   to_string(device),
                                   "--max-row-values",
                                   std::to_string(max_row_values),
                                   "--max-stages",
                                   std::to_string(kModelFileMaxStages),
                                   "--max-classes",
                                   std::to_string(kModelFileMaxClasses),
                                   "--answer-fd",
                                   std::to_string(kAnswerFd)};
  if (!weights.empty()) argv.insert(argv.end(), {"--weights", weights});
  // A compile takes minutes the first time: said at once on a terminal, and every 30 s on any
  // stderr (a cached folder, or a file model_file.py refuses, comes back before the first of those,
  // so a refusal stays one line).
  if (isatty(STDERR_FILENO))
    std::cerr << "condbench: compiling " << given << " for " << to_string(device)
              << " (python/condbench/model_file.py; cached)\n";
  const Ran ran = run(argv, environment_with_package(package), timeout_s, given);
  if (ran.timed_out)
    fail("--model-file: " + given +
         ": model_file.py compile took longer than --compile-timeout=" + std::to_string(timeout_s) +
         " s and was stopped (its process group ended); raise the limit or make the " + "module lighter");
  if (WIFEXITED(ran.status) && WEXITSTATUS(ran.status) == 0) {
    // the answer on condbench's own descriptor: what the user's code printed is never it
    const std::string folder = last_line(ran.answer);
    if (folder.empty())
      fail("--model-file: " + given + ": model_file.py compile ended without naming a folder on descriptor " +
           std::to_string(kAnswerFd) + " (a python -m condbench.model_file of another condbench?)");
    check_compiled_from(folder, given, weights);
    return folder;
  }
  // model_file.py's one line names the file and the part: "model_file: x.py: stages[1]: ..."
  std::string said = last_line(ran.err);
  if (said.rfind("model_file: ", 0) == 0) fail("--model-file: " + printable(said.substr(12), 400));
  const std::string how = WIFSIGNALED(ran.status) ? "was stopped by signal " + std::to_string(WTERMSIG(ran.status))
                                                  : "failed (exit " + std::to_string(WEXITSTATUS(ran.status)) + ")";
  fail("--model-file: " + given + ": model_file.py compile " + how + (said.empty() ? "" : ": " + printable(said, 400)));
}

std::optional<ModelFileFlags> read_model_file_flags(const std::map<std::string, std::string>& flags,
                                                    const std::vector<Device>& devices, int64_t max_row_values) {
  const auto given = [&](const char* name) { return flags.count(name) > 0; };
  if (!given("--model-file")) {
    if (given("--model-weights")) fail("--model-weights: only with --model-file=FILE.py");
    if (given("--compile-timeout")) fail("--compile-timeout: only with --model-file=FILE.py");
    return std::nullopt;
  }
  ModelFileFlags read;
  read.given = flags.at("--model-file");
  if (given("--model-weights")) read.weights = flags.at("--model-weights");
  read.folder =
      model_file_folder(read.given, read.weights, model_file_device(devices), max_row_values, compile_timeout(flags));
  try {
    // A folder compiled elsewhere (or given whole) holds rows condbench-infer reads but a run may not
    // pool: refused here, in one line, rather than as every benchmark's error.
    const ModelFileManifest manifest = read_manifest(read.folder);
    const std::vector<int64_t>& row = manifest.parts.front().input_row;
    const int64_t values = std::accumulate(row.begin(), row.end(), int64_t{1}, std::multiplies<>());
    if (values > max_row_values)
      fail("model file " + read.folder + ": stages[0]: its input row holds " + std::to_string(values) +
           " values, more than the " + std::to_string(max_row_values) + " a run can hold in its pool of inputs");
    const ModelFileFamily& family = load_model_file(read.folder);
    read.config = family.config();
    read.reads = family.reads();
    read.used = "--model-file: " + read.given +
                (read.folder == read.given ? std::string(": ") : ": the folder " + read.folder + ", ") + family.age();
  } catch (const Error& e) {
    fail(std::string("--model-file: ") + e.what());
  }
  return read;
}

}  // namespace condbench
