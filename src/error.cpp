#include "condbench/error.h"

#include <new>

namespace condbench {

void fail(const std::string& message) { throw Error(message); }

std::string printable(const std::string& text, size_t limit) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= limit) return out + "...";
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f)
      out += std::string("\\x") + digits[c >> 4] + digits[c & 15];
    else
      out += static_cast<char>(c);  // printable ASCII and UTF-8 text pass unchanged
  }
  return out;
}

std::string one_line(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory";
  const std::string what = e.what();
  return printable(what.substr(0, what.find('\n')), 400);
}

int exit_code_for(const std::exception& e) { return dynamic_cast<const Error*>(&e) ? 2 : 1; }

}  // namespace condbench
