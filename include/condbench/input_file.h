#pragma once
// The readers of a path a user gives (--weights, --input, --prompt, a model file's folder): what is
// not a regular file is refused before it is opened. Opening a FIFO for reading waits for a writer,
// which may never come; a device or a folder reads as nothing useful. A symbolic link to a regular
// file is one. (condbench-report's result files have the same rule, report/result_file.cpp.)
#include <string>

namespace condbench {

// Throws condbench::Error "<what> '<path>': not a regular file (a FIFO): give a file" when `path`
// names a FIFO, a socket, a device or a folder. A path that does not exist passes: the open that
// follows says so.
void require_regular_file(const std::string& what, const std::string& path);
// What `path` leads to, in words, when it is not a regular file ("a FIFO", "a folder", "a socket",
// "a device"); "" for a regular file or nothing at all. A link is followed.
std::string non_regular_kind(const std::string& path);

}  // namespace condbench
