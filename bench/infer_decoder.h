#pragma once
// condbench-infer's decoder mode (--model=decoder): every selected decoder strategy's generated
// tokens, exit ids and logits for the same prompts, as JSON with whether they agree.
namespace condbench {

// Whether the command line asks for the decoder (--model=decoder).
bool wants_decoder(int argc, char** argv);
// Exit code 0 when the strategies agree, 1 when they do not; throws condbench::Error for bad input.
int run_decoder(int argc, char** argv);

}  // namespace condbench
