// state_dict and tensor files in torch.save's format, read (torch_save_reader.h) and written
// (torch_save_writer.h) by condbench itself, so Python's torch.load and condbench read each other's.
#include <ATen/ATen.h>

#include <unistd.h>
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
#include "condbench/torch_save_files.h"
#include "torch_save_reader.h"
#include "torch_save_writer.h"

namespace condbench {

namespace {

// The model computes in float32: a value that is finite in its file's dtype (float64) but not in float32
// would turn into inf on the way in, and into NaN logits after it. Refused with the file and the key.
void check_values(const std::string& what, const std::string& path, const std::string& key, const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return;
  // Appended piece by piece: GCC 12's -Wstringop-overflow misreads the chained operator+ here.
  std::string named = what;
  named.append(" '").append(path).append("': ");
  if (key.empty())
    named.append("the tensor");
  else
    named.append("'").append(printable(key)).append("'");
  if (!t.isfinite().all().item<bool>()) fail(named + " holds NaN or infinite values");
  const at::Tensor flat = t.flatten();
  const double largest = flat[flat.abs().argmax()].item<double>();  // the value of the largest magnitude
  if (std::abs(largest) > std::numeric_limits<float>::max()) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", largest);
    fail(named + " holds " + value + ", beyond float32's range (the model computes in float32)");
  }
}

}  // namespace

StateDict load_state_dict_file(const std::string& path) {
  // Keys and shapes are checked on the file's meta tensors, before any tensor data is read: a
  // file for another model is refused without copying its weights.
  auto check = [](const StateDict& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    try {
      // Keys and shapes only: the sizes a file cannot say (a transformer's heads) at 1, which fits any.
      std::map<std::string, int> ones;
      for (const ModelFamily* family : model_families())
        for (const FamilyAxis& axis : family->axes())
          if (!axis.from_weights) ones[axis.key] = 1;
      check_state_dict(infer_config(headers, ones), headers);
    } catch (const Error& e) {  // the reader names the file already: drop the model's "weights: "
      const std::string why = e.what();
      fail(why.rfind("weights: ", 0) == 0 ? why.substr(9) : why);
    }
  };
  detail::SavedObject saved = detail::read_torch_save_file("weights", path, check);
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  for (const auto& [key, tensor] : saved.items) check_values("weights", path, key, tensor);
  return std::move(saved.items);
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// The decoder `given` with the sizes the state_dict's shapes hold, checked against its contract.
DecoderConfig decoder_config_of(const StateDict& headers, const DecoderConfig& given) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [key, tensor] : headers) shapes[key] = tensor.sizes().vec();
  auto need = [&](const std::string& key) -> const std::vector<int64_t>& {
    const auto found = shapes.find(key);
    if (found == shapes.end()) fail("has no '" + key + "': not a decoder's state_dict (docs/models.md)");
    if (found->second.size() != 2) fail("'" + key + "' has shape " + shape_text(found->second) + ", not 2-D");
    return found->second;
  };
  auto size = [](int64_t n) { return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max())); };
  DecoderConfig c = given;
  c.vocab = size(need("embed.weight")[0]);
  c.d_model = size(need("embed.weight")[1]);
  c.context = size(need("pos.weight")[0]);
  c.ffn = size(need("layers.0.fc1.weight")[0]);
  c.layers = 0;
  while (c.layers < 1 << 10 && shapes.count("layers." + std::to_string(c.layers) + ".attn.qkv.weight")) ++c.layers;
  c.validate();
  std::set<std::string> expected;
  for (const ParameterSpec& spec : decoder_parameters(c)) {
    expected.insert(spec.name);
    const auto found = shapes.find(spec.name);
    if (found == shapes.end()) fail("has no '" + spec.name + "', which a decoder of " + c.describe() + " has");
    if (found->second != spec.shape)
      fail("'" + spec.name + "' has shape " + shape_text(found->second) + ", a decoder of its other sizes has " +
           shape_text(spec.shape));
  }
  for (const auto& [key, shape] : shapes)
    if (!expected.count(key)) fail("has '" + printable(key) + "', which a decoder has not (docs/models.md)");
  return c;
}

}  // namespace

DecoderModel load_decoder_file(const std::string& path, const DecoderConfig& given) {
  DecoderModel model;
  auto check = [&](const StateDict& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    model.config = decoder_config_of(headers, given);
  };
  detail::SavedObject saved = detail::read_torch_save_file("weights", path, check);
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  std::map<std::string, at::Tensor> by_key;
  for (const auto& [key, tensor] : saved.items) {
    if (!at::isFloatingType(tensor.scalar_type()))
      fail("weights '" + path + "': '" + printable(key) + "' is not a floating-point tensor");
    check_values("weights", path, key, tensor);
    by_key[key] = tensor;
  }
  for (const ParameterSpec& spec : decoder_parameters(model.config)) {
    const at::Tensor t = by_key.at(spec.name).to(at::kFloat).contiguous();
    model.params.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return model;
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
  check_values("input", path, "", saved.tensor);
  return saved.tensor;
}

}  // namespace condbench
