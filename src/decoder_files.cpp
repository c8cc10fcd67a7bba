// The decoder's state_dict and prompt readers: see decoder_files.h.
#include "decoder_files.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <map>

#include "condbench/config.h"
#include "condbench/error.h"
#include "condbench/model.h"
#include "condbench/torch_save_files.h"
#include "torch_save_reader.h"

namespace condbench {

namespace {

// The decoder `given` with the sizes the state_dict's shapes hold, its keys and shapes checked as a
// family's are (check_parameters), both by the family's contract.
DecoderConfig decoder_config_of(const StateDict& headers, const DecoderConfig& given) {
  const StateDictShapes shapes(headers);
  const StateDictContractOf<DecoderConfig>& contract = decoder_family().state_dict();
  if (!shapes.has(contract.own_key()))
    fail("weights: has no '" + contract.own_key() + "': not a decoder's state_dict (docs/models.md)");
  DecoderConfig c = given;
  contract.read_sizes(shapes, c);
  c.validate();
  check_parameters(contract.parameters(c), headers);
  return c;
}

// The decoder a state_dict holds, from what `read` makes of its file given the check of its headers.
template <typename Read>
DecoderModel decoder_from(const std::string& path, const DecoderConfig& given, Read&& read) {
  DecoderModel model;
  auto check = [&](const std::vector<std::pair<std::string, at::Tensor>>& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    model.config = decoder_config_of(headers, given);
  };
  detail::SavedObject saved = read(detail::HeaderCheck(check));
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  std::map<std::string, at::Tensor> by_key;
  for (const auto& [key, tensor] : saved.items) {  // keys, shapes and dtypes: checked from the headers
    detail::check_values("weights", path, key, tensor);
    by_key[key] = tensor;
  }
  for (const ParameterSpec& spec : decoder_family().parameters(model.config)) {
    const at::Tensor t = by_key.at(spec.name).to(at::kFloat).contiguous();
    model.params.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return model;
}

// Token ids [rows, tokens] for `config`, from what torch.save held.
at::Tensor prompt_from(const detail::SavedObject& saved, const DecoderConfig& config) {
  if (saved.kind != detail::SavedObject::Kind::tensor)
    fail("--prompt: expected token ids, an int64 tensor [rows, tokens]");
  const at::Tensor& prompt = saved.tensor;
  if (prompt.dim() != 2 || prompt.size(0) < 1 || prompt.size(1) < 1 ||
      !(prompt.scalar_type() == at::kLong || prompt.scalar_type() == at::kInt))
    fail("--prompt: expected token ids, an int64 tensor [rows, tokens]");
  if (prompt.size(0) > kMaxBatch) fail("--prompt: at most " + std::to_string(kMaxBatch) + " rows");
  if (prompt.size(1) > config.context)
    fail("--prompt: " + std::to_string(prompt.size(1)) + " tokens, longer than the context of " +
         std::to_string(config.context));
  at::Tensor tokens = prompt.to(at::kLong).contiguous();
  const int64_t low = tokens.min().item<int64_t>(), high = tokens.max().item<int64_t>();
  if (low < 0 || high >= config.vocab)
    fail("--prompt: token id " + std::to_string(low < 0 ? low : high) + " is outside the vocabulary 0.." +
         std::to_string(config.vocab - 1));
  return tokens;
}

}  // namespace

void DecoderFamily::read_sizes(const StateDictShapes& shapes, DecoderConfig& c) const {
  auto size = [](int64_t n) { return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max())); };
  const std::vector<int64_t>& embed = shapes.require("embed.weight", 2);
  c.vocab = size(embed[0]);
  c.d_model = size(embed[1]);
  c.context = size(shapes.require("pos.weight", 2)[0]);
  c.ffn = size(shapes.require("layers.0.fc1.weight", 2)[0]);
  // A layer missing between others is named as the key it lacks, not read as a shallower decoder
  // (whose exit_every would then be refused).
  c.layers = shapes.count("layers.", ".norm1.weight");
}

namespace detail {

DecoderModel read_decoder_state_dict(const std::string& path, std::istream& in, uint64_t size,
                                     const DecoderConfig& given) {
  return decoder_from(path, given,
                      [&](const HeaderCheck& check) { return read_torch_save("weights", path, in, size, check); });
}

at::Tensor read_prompt(const std::string& path, std::istream& in, uint64_t size, const DecoderConfig& config) {
  return prompt_from(read_torch_save("prompt", path, in, size), config);
}

}  // namespace detail

DecoderModel load_decoder_file(const std::string& path, const DecoderConfig& given) {
  return decoder_from(path, given, [&](const detail::HeaderCheck& check) {
    return detail::read_torch_save_file("weights", path, check);
  });
}

at::Tensor load_prompt_file(const std::string& path, const DecoderConfig& config) {
  return prompt_from(detail::read_torch_save_file("prompt", path), config);
}

}  // namespace condbench
