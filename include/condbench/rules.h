#pragma once
// The rules the Python package (python/condbench) applies, as data. C++ owns each one (the exit
// test in math::exit_fires, the tolerances and tie margins in agreement.h and model_file.h, the
// batch limit in config.h); this writes them out, and python/condbench/rules.json is exactly this,
// checked by a unit test (Rules.ThePythonPackageHoldsWhatCppSays, which rewrites the file with
// CONDBENCH_WRITE_RULES=1). condbench.rules reads that file, so no Python file types a threshold
// comparison, a tolerance or a limit; the exported workload carries the same values for the run
// that wrote it. Where Python must compute what C++ computes (the agreement of two sets of logits,
// a model's folder name for a --config it compiles), the file carries C++'s answers on examples,
// which the package's tests reproduce.
#include <nlohmann/json.hpp>

namespace condbench {

nlohmann::json rules_as_data();

}  // namespace condbench
