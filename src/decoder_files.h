#pragma once
// The decoder's readers of files a user gives (condbench-infer --model=decoder): its state_dict
// (--weights) and its prompts (--prompt), from bytes already in a stream, as the tools read them
// from their files (torch_save_files.h: load_decoder_file, load_prompt_file) and the fuzzing
// harness (fuzz/decoder_fuzzer.cpp) from memory.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <istream>
#include <string>

#include "condbench/decoder/strategy.h"

namespace condbench::detail {

// A decoder's state_dict: its sizes read from its shapes (the rest from `given`), every key and shape
// checked against the contract before any data is read, every value finite in float32. Throws
// condbench::Error "weights '<path>': ...".
DecoderModel read_decoder_state_dict(const std::string& path, std::istream& in, uint64_t size,
                                     const DecoderConfig& given);

// Prompts: token ids, an int64 (or int32) tensor [rows, tokens] of at most kMaxBatch rows, tokens
// within `config`'s context, ids within its vocabulary. Throws condbench::Error "--prompt: ...".
at::Tensor read_prompt(const std::string& path, std::istream& in, uint64_t size, const DecoderConfig& config);

}  // namespace condbench::detail
