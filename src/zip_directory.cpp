#include "zip_directory.h"

#include <algorithm>
#include <string>

#include "condbench/error.h"

namespace condbench::detail {

namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64End = 0x06064b50, kZip64Locator = 0x07064b50,
                   kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;
constexpr uint64_t kEndSize = 22, kMaxComment = 65535, kEntrySize = 46, kLocalSize = 30;

struct ZipRecord {
  std::string name;            // as stored, e.g. "archive/data.pkl"
  uint64_t compressed = 0;     // bytes in the file
  uint64_t uncompressed = 0;   // bytes once read
  uint64_t header_offset = 0;  // its local header
};

// Bytes of the archive, read on demand; every read is checked against the file's size.
class Archive {
 public:
  Archive(std::istream& in, uint64_t size) : in_(in), size_(size) {}
  uint64_t size() const { return size_; }
  std::string read(uint64_t offset, uint64_t n) const {
    if (offset > size_ || n > size_ - offset) fail("zip: a structure lies past the end of the file");
    std::string bytes(n, '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(bytes.data(), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in_.gcount()) != n) fail("zip: cannot read the file");
    return bytes;
  }

 private:
  std::istream& in_;
  uint64_t size_;
};

uint64_t little(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int b = 0; b < n; ++b) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + b])) << (8 * b);
  return v;
}

// Where the central directory is and how many records it holds, from the end records.
struct Directory {
  uint64_t offset = 0, size = 0, count = 0;
};

Directory find_directory(const Archive& zip) {
  if (zip.size() < kEndSize) fail("zip: too short to be a zip archive");
  const uint64_t tail_size = std::min<uint64_t>(zip.size(), kEndSize + kMaxComment);
  const std::string tail = zip.read(zip.size() - tail_size, tail_size);
  for (uint64_t at = tail_size - kEndSize + 1; at-- > 0;) {
    if (little(tail, at, 4) != kEndOfDirectory) continue;
    const uint64_t end_offset = zip.size() - tail_size + at;
    Directory d{little(tail, at + 16, 4), little(tail, at + 12, 4), little(tail, at + 10, 2)};
    if (d.offset == 0xffffffff || d.size == 0xffffffff || d.count == 0xffff) {  // zip64: sizes elsewhere
      if (end_offset < 20) fail("zip: zip64 locator missing");
      const std::string locator = zip.read(end_offset - 20, 20);
      if (little(locator, 0, 4) != kZip64Locator) fail("zip: zip64 locator missing");
      const std::string end64 = zip.read(little(locator, 8, 8), 56);
      if (little(end64, 0, 4) != kZip64End) fail("zip: zip64 end record missing");
      d = {little(end64, 48, 8), little(end64, 40, 8), little(end64, 32, 8)};
    }
    if (d.offset > zip.size() || d.size > zip.size() - d.offset)
      fail("zip: the central directory lies outside the file");
    if (d.count > kMaxZipRecords)
      fail("zip: " + std::to_string(d.count) + " records, more than the limit of " + std::to_string(kMaxZipRecords));
    return d;
  }
  fail("zip: no end of central directory record");
}

// The zip64 extra field holds, in this order, each of the sizes and the offset whose 32-bit field is
// 0xffffffff.
void read_zip64_extra(const std::string& extra, ZipRecord& r) {
  for (size_t at = 0; at + 4 <= extra.size();) {
    const uint64_t id = little(extra, at, 2), n = little(extra, at + 2, 2);
    if (at + 4 + n > extra.size()) fail("zip: record '" + printable(r.name) + "' has a malformed extra field");
    if (id == 1) {
      size_t field = at + 4;
      for (uint64_t* value : {&r.uncompressed, &r.compressed, &r.header_offset}) {
        if (*value != 0xffffffff) continue;
        if (field + 8 > at + 4 + n) fail("zip: record '" + printable(r.name) + "' has a short zip64 field");
        *value = little(extra, field, 8);
        field += 8;
      }
    }
    at += 4 + n;
  }
}

}  // namespace

void check_zip_directory(std::istream& in, uint64_t size) {
  const Archive zip(in, size);
  const Directory d = find_directory(zip);
  const std::string directory = zip.read(d.offset, d.size);
  size_t at = 0;
  for (uint64_t i = 0; i < d.count; ++i) {
    if (at + kEntrySize > directory.size() || little(directory, at, 4) != kDirectoryEntry)
      fail("zip: the central directory is malformed");
    ZipRecord r;
    r.compressed = little(directory, at + 20, 4);
    r.uncompressed = little(directory, at + 24, 4);
    const uint64_t name_size = little(directory, at + 28, 2), extra_size = little(directory, at + 30, 2),
                   comment_size = little(directory, at + 32, 2);
    r.header_offset = little(directory, at + 42, 4);
    if (at + kEntrySize + name_size + extra_size + comment_size > directory.size())
      fail("zip: the central directory is malformed");
    r.name = directory.substr(at + kEntrySize, name_size);
    read_zip64_extra(directory.substr(at + kEntrySize + name_size, extra_size), r);
    at += kEntrySize + name_size + extra_size + comment_size;

    const std::string what = "zip record '" + printable(r.name) + "'";
    if (r.header_offset > size || kLocalSize > size - r.header_offset)
      fail(what + ": its header lies outside the file");
    const std::string local = zip.read(r.header_offset, kLocalSize);
    if (little(local, 0, 4) != kLocalHeader) fail(what + ": no local header where the directory says");
    const uint64_t data = r.header_offset + kLocalSize + little(local, 26, 2) + little(local, 28, 2);
    if (data > size || r.compressed > size - data)
      fail(what + " declares " + std::to_string(r.compressed) + " bytes, more than the file holds");
    // A record may not expand beyond the file: torch.save stores records uncompressed, and this
    // bounds what reading any record can allocate by the size of the file.
    if (r.uncompressed > size)
      fail(what + " declares " + std::to_string(r.uncompressed) + " bytes once read, more than the file's " +
           std::to_string(size) + " (limit: record size)");
  }
}

}  // namespace condbench::detail
