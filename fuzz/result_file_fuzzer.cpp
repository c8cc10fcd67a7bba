// libFuzzer harness: condbench-report's result-file reader on arbitrary text, through the same
// parse_result_file that load_result_file calls, then the report's analysis of what it accepted.
// condbench::Error is the expected answer to bad text; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis.h"
#include "comparison.h"
#include "condbench/error.h"
#include "result_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::vector<condbench::report::ResultFile> files = {
        condbench::report::parse_result_file("fuzz.json", std::string(reinterpret_cast<const char*>(data), size))};
    // What the report does with an accepted file: group, rank, recommend, compare with itself.
    const auto groups = condbench::report::make_groups(files);
    condbench::report::best_strategies(groups);
    condbench::report::recommendations(groups);
    condbench::report::primitive_floors(files);
    condbench::report::compare(files[0], files[0]);
  } catch (const condbench::Error&) {
  }
  return 0;
}
