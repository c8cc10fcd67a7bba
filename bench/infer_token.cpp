#include "infer_token.h"

#include <string>
#include <vector>

#include "condbench/decoder/strategy.h"
#include "condbench/torch_save_files.h"
#include "decoder_sizes.h"

namespace condbench {

namespace {

MemoryNeed decoder_need(const DecoderConfig& config, int64_t rows) {
  MemoryNeed need = config.memory_need(rows);
  need.add_all(decoder_output_terms(), config.memory_sizes(rows));
  return need;
}

constexpr TokenInferWork<DecoderModel> kDecoderInfer{&load_decoder_file,  &load_prompt_file, &seeded_decoder_parameters,
                                                     &seeded_prompts,     &decoder_need,     "--decoder",
                                                     &apply_decoder_sizes};

}  // namespace

const std::vector<TokenInferMode>& token_infer_modes() {
  // A family timed per token: one line here, with its Family and what condbench-infer needs of it.
  static const std::vector<TokenInferMode> modes = {
      make_token_infer_mode(decoder_family(), kDecoderInfer),
  };
  return modes;
}

const TokenInferMode* token_infer_mode(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string name;
    if (arg.rfind("--model=", 0) == 0)
      name = arg.substr(std::string("--model=").size());
    else if (arg == "--model" && i + 1 < argc)
      name = argv[i + 1];
    else
      continue;
    for (const TokenInferMode& mode : token_infer_modes())
      if (mode.family->name() == name) return &mode;
    return nullptr;  // a family timed per inference, or none: the model's flags say so
  }
  return nullptr;
}

}  // namespace condbench
