#include "condbench/input_file.h"

#include <sys/stat.h>

#include "condbench/error.h"

namespace condbench {

std::string non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return S_ISFIFO(st.st_mode)   ? "a FIFO"
         : S_ISDIR(st.st_mode)  ? "a folder"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "a device";
}

void require_regular_file(const std::string& what, const std::string& path) {
  if (const std::string kind = non_regular_kind(path); !kind.empty())
    fail(what + " '" + printable(path) + "': not a regular file (" + kind + "): give a file");
}

}  // namespace condbench
