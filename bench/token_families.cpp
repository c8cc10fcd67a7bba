#include "decoder_case.h"
#include "token_family.h"
#include "token_models.h"

#include <string>
#include <vector>

#include "condbench/error.h"

namespace condbench {

const std::vector<TokenFamily>& token_families() {
  // A family timed per token: one line here, with its Family and its work (bench/<family>_case.h).
  static const std::vector<TokenFamily> families = {
      make_token_family(decoder_family(), kDecoderWork),
  };
  return families;
}

const TokenFamily& token_family(const Family& family) {
  for (const TokenFamily& f : token_families())
    if (f.family == &family) return f;
  fail("the " + family.name() + " family is not timed per token");
}

}  // namespace condbench
