#pragma once
// torch.save files: state_dicts and tensors in torch.save's zip format, read and written by
// condbench itself (src/torch_save_reader.h, src/torch_save_writer.h), so that Python's torch.load
// and condbench read each other's. Files come from other machines: the readers check everything
// and throw condbench::Error with one line naming the file.
#include <ATen/core/Tensor.h>

#include <string>

#include "condbench/decoder/strategy.h"
#include "condbench/model.h"

namespace condbench {

// torch.save(model.state_dict(), path) files (zip format), read with LibTorch's unpickler. Throws condbench::Error
// ("weights FILE: ...") when the file is unreadable or holds anything but a dict of tensors.
StateDict load_state_dict_file(const std::string& path);
// Writes a file that Python's torch.load (with its default weights_only=True) and
// load_state_dict_file read: an OrderedDict of tensors, like model.state_dict(). Atomic.
void save_state_dict_file(const StateDict& state_dict, const std::string& path);

// A decoder's state_dict (docs/models.md, "The decoder"): the sizes its shapes hold (vocab, d_model,
// ffn, layers, context) read from it, the others (heads, exit_every, prompt, generate) taken from
// `given`; every key and shape checked against that decoder's contract before any data is read.
// Throws condbench::Error naming the file and the first key that does not fit.
DecoderModel load_decoder_file(const std::string& path, const DecoderConfig& given);
// Prompts for `config` (condbench-infer's --prompt): token ids [rows, tokens] within its context and
// vocabulary, at most kMaxBatch rows; int64. Throws condbench::Error, one line.
at::Tensor load_prompt_file(const std::string& path, const DecoderConfig& config);

// A tensor saved with torch.save (condbench-infer's --input). Throws condbench::Error.
at::Tensor load_tensor_file(const std::string& path);
// Writes a tensor as torch.save does (torch.load reads it, weights_only too); atomic.
void save_tensor_file(const at::Tensor& tensor, const std::string& path);

}  // namespace condbench
