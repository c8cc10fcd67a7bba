#pragma once
// The central directory of a zip archive, read and checked before LibTorch's zip reader sees the
// file: LibTorch allocates whatever size a record declares, so a 600-byte file could ask it for
// gigabytes. Here every record's declared sizes and offset must fit inside the file.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace condbench::detail {

struct ZipRecord {
  std::string name;            // as stored, e.g. "archive/data.pkl"
  uint64_t compressed = 0;     // bytes in the file
  uint64_t uncompressed = 0;   // bytes once read
  uint64_t header_offset = 0;  // its local header
  uint16_t method = 0;         // 0 stored, 8 deflated
};

// Most records a torch.save file may hold (one per tensor storage, plus a few): a limit.
constexpr uint64_t kMaxZipRecords = 100000;

// Reads the directory of the zip in `in` (`size` bytes). Throws condbench::Error naming the record
// and the limit when a record's sizes or offset do not fit the file, or the directory is malformed.
std::vector<ZipRecord> read_zip_directory(std::istream& in, uint64_t size);

}  // namespace condbench::detail
