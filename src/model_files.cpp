// state_dict and tensor files in torch.save's format, read (torch_save_reader.h) and written
// (torch_save_writer.h) by condbench itself, so Python's torch.load and condbench read each other's.
#include <ATen/ATen.h>

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "condbench/error.h"
#include "condbench/model_files.h"
#include "torch_save_reader.h"
#include "torch_save_writer.h"

namespace condbench {

StateDict load_state_dict_file(const std::string& path) {
  // Keys and shapes are checked on the file's meta tensors, before any tensor data is read: a
  // file for another model is refused without copying its weights.
  auto check = [](const StateDict& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    try {
      check_state_dict(infer_config(headers, /*heads=*/1), headers);  // keys and shapes: any heads count fits
    } catch (const Error& e) {  // the reader names the file already: drop the model's "weights: "
      const std::string why = e.what();
      fail(why.rfind("weights: ", 0) == 0 ? why.substr(9) : why);
    }
  };
  detail::SavedObject saved = detail::read_torch_save_file("weights", path, check);
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
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
  return saved.tensor;
}

}  // namespace condbench
