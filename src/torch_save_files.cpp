// state_dict and tensor files in torch.save's format, read (torch_save_reader.h) and written
// (torch_save_writer.h) by condbench itself, so Python's torch.load and condbench read each other's.
#include <ATen/ATen.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/torch_save_files.h"
#include "torch_save_reader.h"
#include "torch_save_writer.h"

namespace condbench {

StateDict load_state_dict_file(const std::string& path) {
  // Keys and shapes are checked on the file's meta tensors, before any tensor data is read: a
  // file for another model is refused without copying its weights.
  auto check = [](const StateDict& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    // A family timed per token shares a block prefix with one timed per inference (the decoder's
    // "layers." is the transformer's): its own key says whose file this is.
    const auto holds = [&](const std::string& key) {
      return std::any_of(headers.begin(), headers.end(), [&](const auto& entry) { return entry.first == key; });
    };
    for (const Family* family : families()) {
      const StateDictKeys* keys = family->state_dict_keys();
      if (family->per_inference() || keys == nullptr || keys->own_key().empty() || !holds(keys->own_key())) continue;
      const std::string& name = family->name();
      fail("holds a " + name + "'s state_dict (" + keys->own_key() + "): condbench runs the " + name +
           " on seeded weights (--model=" + name + "); condbench-infer --model=" + name + " --weights reads this file");
    }
    // Keys and shapes only: the sizes a file cannot say (a transformer's heads) at 1, which fits any.
    std::map<std::string, int> ones;
    for (const ModelFamily* family : model_families())
      for (const FamilyAxis& axis : family->axes())
        if (!axis.from_weights) ones[axis.key] = 1;
    check_state_dict(infer_config(headers, ones), headers);
  };
  detail::SavedObject saved = detail::read_torch_save_file("weights", path, check);
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  for (const auto& [key, tensor] : saved.items) detail::check_values("weights", path, key, tensor);
  return std::move(saved.items);
}

void save_state_dict_file(const StateDict& state_dict, const std::string& path) {
  detail::write_torch_save_file(path, state_dict);
}

void save_tensor_file(const at::Tensor& tensor, const std::string& path) {
  detail::write_torch_save_file(path, tensor);
}

at::Tensor load_tensor_file(const std::string& path) {
  detail::SavedObject saved = detail::read_torch_save_file("input", path);
  if (saved.kind != detail::SavedObject::Kind::tensor)
    fail("input '" + path + "': expected a tensor saved with torch.save, found a dict");
  detail::check_values("input", path, "", saved.tensor);
  return saved.tensor;
}

}  // namespace condbench
