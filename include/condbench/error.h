#pragma once
// condbench reports bad input (a malformed flag, an unreadable weights file, a wrong shape) by
// throwing condbench::Error with one line that names what was wrong; the command-line tools turn
// it into that line on stderr and exit code 2. Anything else that reaches a tool's main is an
// internal failure: exit code 1 (see one_line and exit_code_for).
#include <exception>
#include <stdexcept>
#include <string>

namespace condbench {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void fail(const std::string& message);

// Text taken from an input file (a key, a benchmark name, a context value) made safe to put in a
// one-line message: control characters as \n, \t, \xNN (UTF-8 text passes), and cut after `limit`
// characters, so a crafted name can neither break the line nor flood the terminal.
std::string printable(const std::string& text, size_t limit = 80);

// The single line a tool prints for an exception that reached its main: the first line of
// e.what(), printable. std::bad_alloc says "out of memory", which no limit should let happen.
std::string one_line(const std::exception& e);

// What a tool's main catches: 2 for bad input (condbench::Error), 1 for anything else.
int exit_code_for(const std::exception& e);

}  // namespace condbench
