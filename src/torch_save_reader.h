#pragma once
// Reads what Python's torch.save writes (the zip format of PyTorch >= 1.6): a state_dict or a
// single tensor. LibTorch's own torch::pickle_load cannot read a state_dict saved from Python: its
// unpickler turns every collections.OrderedDict into None, and model.state_dict() is one. So
// condbench interprets the pickle itself: the small part of the pickle protocol that tensors,
// dicts and OrderedDicts use, with tensor bytes read from the archive's data/ records.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace condbench::detail {

struct SavedObject {
  enum class Kind { tensor, dict_of_tensors };
  Kind kind;
  at::Tensor tensor;                                       // Kind::tensor
  std::vector<std::pair<std::string, at::Tensor>> items;  // Kind::dict_of_tensors, in file order
};

// Throws condbench::Error("<what> '<path>': ...") for an unreadable file, a foreign format, or
// content other than a tensor or a dict of tensors.
SavedObject read_torch_save_file(const std::string& what, const std::string& path);

}  // namespace condbench::detail
