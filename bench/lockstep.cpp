#include "lockstep.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "condbench/error.h"
#include "condbench/result_format.h"

namespace condbench {

namespace {

// A descriptor the coordinator passed: a whole number of a few digits that is open here.
int descriptor(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    fail("CONDBENCH_LOCKSTEP: '" + printable(whole, 80) + "' is not GO_FD,DONE_FD,ID");
  const int fd = std::stoi(text);
  if (fcntl(fd, F_GETFD) == -1) fail("CONDBENCH_LOCKSTEP: descriptor " + text + " is not open in this process");
  return fd;
}

// CONDBENCH_LOCKSTEP_ALLOWANCE: a number from 1 to kMaxLockstepAllowance, as given ("1" when unset).
std::string given_allowance() {
  const char* value = std::getenv("CONDBENCH_LOCKSTEP_ALLOWANCE");
  if (value == nullptr || *value == '\0') return "1";
  const std::string text = value;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(x >= 1 && x <= kMaxLockstepAllowance))
    fail("CONDBENCH_LOCKSTEP_ALLOWANCE: '" + printable(text, 40) + "' is not a number from 1 to " +
         std::to_string(static_cast<int>(kMaxLockstepAllowance)));
  return text;
}

}  // namespace

std::optional<Lockstep> Lockstep::from_environment() {
  const char* value = std::getenv("CONDBENCH_LOCKSTEP");
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string text = value;
  const size_t first = text.find(','), second = first == std::string::npos ? first : text.find(',', first + 1);
  if (second == std::string::npos || second + 1 >= text.size())
    fail("CONDBENCH_LOCKSTEP: '" + printable(text, 80) + "' is not GO_FD,DONE_FD,ID");
  const int go = descriptor(text.substr(0, first), text),
            done = descriptor(text.substr(first + 1, second - first - 1), text);
  // A coordinator that is gone closes the pipe: a write then fails (wait_turn says so), not a signal.
  ::signal(SIGPIPE, SIG_IGN);
  return Lockstep(go, done, text.substr(second + 1), given_allowance());
}

void Lockstep::wait_turn() {
  const char done = 'd';
  ssize_t n;
  do n = ::write(done_, &done, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) fail("lockstep: the coordinator is gone (its pipe closed); stopping");
  char go = 0;
  do n = ::read(go_, &go, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) fail("lockstep: the coordinator is gone (its pipe closed); stopping");
  holding_ = true;
}

Lockstep* lockstep() {
  static std::optional<Lockstep> mine = Lockstep::from_environment();
  return mine ? &*mine : nullptr;
}

}  // namespace condbench
