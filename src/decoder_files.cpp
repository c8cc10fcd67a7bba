// The decoder's state_dict and prompt readers: see decoder_files.h.
#include "decoder_files.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>

#include "condbench/model.h"
#include "condbench/torch_save_files.h"
#include "token_model_files.h"
#include "torch_save_reader.h"

namespace condbench {

namespace {

// The decoder's files, by its family's contract.
template <typename Read>
DecoderModel decoder_from(const std::string& path, const DecoderConfig& given, Read&& read) {
  return token_model_from<DecoderModel>(decoder_family().state_dict(), decoder_family().name(), path, given, read);
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
  return token_ids_from(read_torch_save("prompt", path, in, size), config);
}

}  // namespace detail

DecoderModel load_decoder_file(const std::string& path, const DecoderConfig& given) {
  return decoder_from(path, given, [&](const detail::HeaderCheck& check) {
    return detail::read_torch_save_file("weights", path, check);
  });
}

at::Tensor load_prompt_file(const std::string& path, const DecoderConfig& config) {
  return token_ids_from(detail::read_torch_save_file("prompt", path), config);
}

}  // namespace condbench
