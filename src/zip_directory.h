#pragma once
// The central directory of a zip archive, read and checked before LibTorch's zip reader sees the
// file: LibTorch allocates whatever size a record declares, so a 600-byte file could ask it for
// gigabytes. Here every record's declared sizes and offset must fit inside the file.
#include <cstdint>
#include <istream>

namespace condbench::detail {

// Most records a torch.save file may hold (one per tensor storage, plus a few): a limit.
constexpr uint64_t kMaxZipRecords = 100000;

// Checks the directory of the zip in `in` (`size` bytes). Throws condbench::Error naming the record
// and the limit when a record's sizes or offset do not fit the file, or the directory is malformed.
void check_zip_directory(std::istream& in, uint64_t size);

}  // namespace condbench::detail
