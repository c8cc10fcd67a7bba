// libFuzzer harness: the torch.save reader (zip directory check, LibTorch's zip reader, condbench's
// pickle interpreter, tensor views) on arbitrary bytes, through the same read_torch_save the tools
// call. condbench::Error is the expected answer to bad bytes; anything else (a crash, a sanitizer
// report, another exception escaping) is a finding.
#include <c10/util/Logging.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "condbench/error.h"
#include "torch_save_reader.h"

// LibTorch records a stack trace in every c10::Error it throws, which under ASan takes longer than
// reading the file; the reader never shows it, so the harness switches it off to fuzz faster.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  c10::SetStackTraceFetcher([]() -> std::string { return {}; });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size), std::ios::binary);
  try {
    condbench::detail::read_torch_save("input", "fuzz", in, size);
  } catch (const condbench::Error&) {
    // refused with a message: what bad input must get
  }
  return 0;
}
