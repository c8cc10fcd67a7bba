#pragma once
// Writes what Python's torch.load reads with its default weights_only=True: the zip format with a
// pickle that uses only what that unpickler allows (OrderedDict, torch._utils._rebuild_tensor_v2,
// typed storages). torch::pickle_save cannot serve: it wraps dicts in
// torch.jit._pickle.restore_type_tag, which weights_only refuses.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace condbench::detail {

// A state_dict (names -> tensors, kept in order) or, with an empty name list, a single tensor.
// Writes to a temporary file beside `path` and renames it into place. Throws condbench::Error.
void write_torch_save_file(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& items);
void write_torch_save_file(const std::string& path, const at::Tensor& tensor);

}  // namespace condbench::detail
