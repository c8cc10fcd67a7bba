#pragma once
// condbench reports bad input (a malformed flag, an unreadable weights file, a wrong shape) by
// throwing condbench::Error with one line that names what was wrong; the command-line tools turn
// it into that line on stderr and exit code 2.
#include <stdexcept>
#include <string>

namespace condbench {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void fail(const std::string& message);

}  // namespace condbench
