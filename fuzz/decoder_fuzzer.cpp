// libFuzzer harness: the decoder's readers of files a user gives condbench-infer --model=decoder —
// its state_dict (--weights: sizes read from the shapes, every key checked against the contract
// before any data is read, values finite in float32) and its prompts (--prompt: token ids within the
// context and the vocabulary) — on arbitrary bytes, through the same functions the tool calls
// (src/decoder_files.h). condbench::Error is the expected answer to bad bytes; anything else (a
// crash, a sanitizer report, another exception escaping) is a finding.
#include <c10/util/Logging.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "condbench/error.h"
#include "decoder_files.h"

// LibTorch records a stack trace in every c10::Error it throws, which under ASan takes longer than
// reading the file; the readers never show it, so the harness switches it off to fuzz faster.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  c10::SetStackTraceFetcher([]() -> std::string { return {}; });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // Both readers on every input: a state_dict the prompt reader refuses, and the other way round.
  const condbench::DecoderConfig given;  // heads and exit_every as condbench-infer's defaults
  try {
    std::istringstream in(bytes, std::ios::binary);
    condbench::detail::read_decoder_state_dict("fuzz", in, size, given);
  } catch (const condbench::Error&) {
    // refused with a message: what bad input must get
  }
  try {
    std::istringstream in(bytes, std::ios::binary);
    condbench::detail::read_prompt("fuzz", in, size, given);
  } catch (const condbench::Error&) {
  }
  return 0;
}
