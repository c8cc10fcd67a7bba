#pragma once
// condbench-infer's decoder mode (--model=decoder): every selected decoder strategy's generated
// tokens, exit ids and logits for the same prompts, as JSON with whether they agree.
#include <string>
#include <vector>

namespace condbench {

// Whether --model names a family timed per token (the decoder), whose rows are prompts.
bool wants_decoder(int argc, char** argv);
// Exit code 0 when the strategies agree, 1 when they do not; throws condbench::Error for bad input.
int run_decoder(int argc, char** argv);

}  // namespace condbench
