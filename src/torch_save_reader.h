#pragma once
// Reads what Python's torch.save writes (the zip format of PyTorch >= 1.6): a state_dict or a
// single tensor. LibTorch's own torch::pickle_load cannot read a state_dict saved from Python: its
// unpickler turns every collections.OrderedDict into None, and model.state_dict() is one. So
// condbench interprets the pickle itself: the small part of the pickle protocol that tensors,
// dicts and OrderedDicts use, with tensor bytes read from the archive's data/ records.
//
// The files come from other machines, so reading one is bounded: the limits below are checked
// before anything is allocated for them, and each error names the limit it hit.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace condbench::detail {

// The pickle (data.pkl) may be at most this large...
constexpr uint64_t kMaxPickleBytes = 64ull << 20;
// ...run at most this many opcodes (each makes at most one value)...
constexpr uint64_t kMaxPickleOps = 1000000;
// ...nest MARKs (tuples, lists, dicts being built) at most this deep...
constexpr size_t kMaxPickleNesting = 100;
// ...hold at most this many items in one list, tuple or dict (a state_dict's entries)...
constexpr size_t kMaxPickleEntries = 10000;
// ...and make at most this many bytes of strings.
constexpr uint64_t kMaxPickleTextBytes = 64ull << 20;
// Tensors have at most this many dimensions.
constexpr size_t kMaxTensorDims = 64;
// The storages read, and the tensors made from them, may not total more bytes than the file has:
// torch.save stores every storage whole and uncompressed, so a real file always fits.

struct SavedObject {
  enum class Kind { tensor, dict_of_tensors };
  Kind kind;
  at::Tensor tensor;                                      // Kind::tensor
  std::vector<std::pair<std::string, at::Tensor>> items;  // Kind::dict_of_tensors, in file order
};

// Called with the file's tensors as meta tensors (names, dtypes and shapes, no data; the name is
// empty for a single tensor) before any tensor data is read; throws condbench::Error to refuse.
using HeaderCheck = std::function<void(const std::vector<std::pair<std::string, at::Tensor>>&)>;

// Throws condbench::Error("<what> '<path>': ...") for an unreadable file, a foreign format, content
// other than a tensor or a dict of tensors, a limit exceeded, or what `check` refuses.
SavedObject read_torch_save_file(const std::string& what, const std::string& path, const HeaderCheck& check = {});

// The same from a stream of `size` bytes; `path` only names it in errors. The file reader and
// the fuzzing harness both come here.
SavedObject read_torch_save(const std::string& what, const std::string& path, std::istream& in, uint64_t size,
                            const HeaderCheck& check = {});

// The model computes in float32: a value that is finite in its file's dtype (float64) but not in
// float32 would turn into inf on the way in, and into NaN logits after it. Throws condbench::Error
// "<what> '<path>': '<key>' holds ..." for NaN, infinite or out-of-float32 values (the tensor
// itself where `key` is empty).
void check_values(const std::string& what, const std::string& path, const std::string& key, const at::Tensor& t);

}  // namespace condbench::detail
