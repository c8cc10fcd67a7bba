// libFuzzer harness: the reader of a model file's manifest.json (parse_manifest, which
// read_manifest calls on the file's text) on arbitrary text, then what messages make of an
// accepted manifest's shapes. condbench::Error is the expected answer to bad text; anything else
// is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "condbench/error.h"
#include "condbench/model_file_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const condbench::ModelFileManifest m =
        condbench::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const condbench::ModelFilePart& part : m.parts) (void)condbench::row_text(part.input_row);
  } catch (const condbench::Error&) {
  }
  return 0;
}
