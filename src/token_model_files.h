#pragma once
// What a family timed per token reads from the files a user gives (the decoder's: decoder_files.h),
// written once for any such family's Model (token_strategy.h), from what torch.save held: its
// state_dict, by the family's contract (family.h: StateDictContractOf), and prompts of token ids.
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "condbench/config.h"  // kMaxBatch
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/model.h"
#include "condbench/token_strategy.h"  // TokenModel
#include "torch_save_reader.h"

namespace condbench {

// The model a state_dict holds, from what `read` makes of its file given the check of its headers:
// `given` with the sizes its shapes hold, its keys and shapes checked as a family's are
// (check_parameters) before any data is read, both by `contract`, the family `family`'s.
template <TokenModel Model, typename Read>
Model token_model_from(const StateDictContractOf<typename Model::Config>& contract, const std::string& family,
                       const std::string& path, const typename Model::Config& given, Read&& read) {
  Model model;
  auto check = [&](const std::vector<std::pair<std::string, at::Tensor>>& headers) {
    if (headers.size() == 1 && headers.front().first.empty()) return;  // a bare tensor: refused below
    const StateDictShapes shapes(headers);
    if (!shapes.has(contract.own_key()))
      fail("weights: has no '" + contract.own_key() + "': not a " + family + "'s state_dict (docs/models.md)");
    model.config = given;
    contract.read_sizes(shapes, model.config);
    model.config.validate();
    check_parameters(contract.parameters(model.config), headers);
  };
  detail::SavedObject saved = read(detail::HeaderCheck(check));
  if (saved.kind != detail::SavedObject::Kind::dict_of_tensors)
    fail("weights '" + path + "': expected a state_dict (a dict of tensors), found a tensor");
  std::map<std::string, at::Tensor> by_key;
  for (const auto& [key, tensor] : saved.items) {  // keys, shapes and dtypes: checked from the headers
    detail::check_values("weights", path, key, tensor);
    by_key[key] = tensor;
  }
  for (const ParameterSpec& spec : contract.parameters(model.config)) {
    const at::Tensor t = by_key.at(spec.name).to(at::kFloat).contiguous();
    model.params.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return model;
}

// Token ids int64 [rows, tokens] for `config` (its `context` and `vocab`), from what torch.save held.
template <typename Config>
at::Tensor token_ids_from(const detail::SavedObject& saved, const Config& config) {
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

}  // namespace condbench
