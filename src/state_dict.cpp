// Reading and writing the files Python's torch.save writes (the zip-based format), through
// torch::pickle_load / torch::pickle_save.
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

namespace condbench {

namespace {

std::vector<char> read_file(const std::string& what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(what + " '" + path + "': cannot open: " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(what + " '" + path + "': read error");
  if (bytes.empty()) fail(what + " '" + path + "': empty file");
  return bytes;
}

c10::IValue unpickle(const std::string& what, const std::string& path) {
  const std::vector<char> bytes = read_file(what, path);
  try {
    return torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    fail(what + " '" + path + "': not a file torch.save wrote (" + reason + ")");
  }
}

}  // namespace

StateDict load_state_dict_file(const std::string& path) {
  const c10::IValue value = unpickle("weights", path);
  if (!value.isGenericDict()) fail("weights '" + path + "': expected a state_dict (a dict of tensors)");
  StateDict state_dict;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) fail("weights '" + path + "': a state_dict key is not a string");
    const std::string name = entry.key().toStringRef();
    if (!entry.value().isTensor()) fail("weights '" + path + "': '" + name + "' is not a tensor");
    state_dict.emplace_back(name, entry.value().toTensor());
  }
  return state_dict;
}

void save_state_dict_file(const StateDict& state_dict, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : state_dict) dict.insert(name, tensor.detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
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
  const c10::IValue value = unpickle("input", path);
  if (!value.isTensor()) fail("input '" + path + "': expected a tensor saved with torch.save");
  return value.toTensor();
}

}  // namespace condbench
