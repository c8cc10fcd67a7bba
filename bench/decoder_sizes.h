#pragma once
// The decoder models condbench and condbench-infer run: the default size, --full's, and the sizes
// the flags give.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "condbench/decoder/config.h"

namespace condbench {

// The decoders the flags select, as every family's (cli::size_combinations): every combination of
// the sizes its flags give (--d-model=N[,N...], or --decoder=SIZE=N,..., the old spelling; a size
// given both ways is refused), then with --full GPT-2 small's layer shape; each once. Throws
// condbench::Error naming the flag.
std::vector<DecoderConfig> decoder_configs(const std::map<std::string, std::string>& flags, bool full);
// Sets the sizes --decoder=SIZE=N,... names in `config`, each in its range and once; checks nothing
// across sizes. Returns the sizes it set, by key.
std::vector<std::string> apply_decoder_sizes(const std::string& sizes, DecoderConfig& config);

}  // namespace condbench
