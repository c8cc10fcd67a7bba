// state_dict and tensor files: read with condbench's torch.save reader (torch_save_reader.h),
// written with torch::pickle_save, which Python's torch.load reads.
#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "condbench/error.h"
#include "condbench/model.h"
#include "torch_save_reader.h"

namespace condbench {

StateDict load_state_dict_file(const std::string& path) {
  detail::SavedObject saved = detail::read_torch_save_file("weights", path);
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  return std::move(saved.items);
}

void save_state_dict_file(const StateDict& state_dict, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : state_dict) dict.insert(name, tensor.detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));  // what torch.load reads
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::remove(tmp.c_str());
      fail("weights '" + path + "': cannot write");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("weights '" + path + "': cannot write: " + std::strerror(errno));
  }
}

at::Tensor load_tensor_file(const std::string& path) {
  detail::SavedObject saved = detail::read_torch_save_file("input", path);
  if (saved.kind != detail::SavedObject::Kind::tensor)
    fail("input '" + path + "': expected a tensor saved with torch.save, found a dict");
  return saved.tensor;
}

}  // namespace condbench
