#pragma once
// A test knob, not a feature: CONDBENCH_TEST_SLOWDOWN=cpu/native/fused:1.2[,device/engine/strategy:F...]
// makes the named strategies spin after each timed inference until it has taken F times as long,
// so a check of the statistics (scripts/aa-check) has a slowdown of known size to find. A result
// file made with it records the setting in its context (condbench_test_slowdown).
#include <string>

namespace condbench {

// The factor for "device/engine/strategy" (1 when not named or the variable is unset). A malformed
// setting throws condbench::Error naming the variable.
double test_slowdown(const std::string& strategy_path);

// The variable's value, or "" when unset.
std::string test_slowdown_setting();

// A second test knob: CONDBENCH_TEST_TWIN=cpu/torch/eager_host[,device/engine/strategy...] registers
// each named strategy a second time as <name>_twin — the same code under another name — so a run can
// show that the report's verdicts make no claim between identical work (docs/statistics.md); items
// python/<variant> are the PyTorch peer's, which reads the same variable. Called
// before the command line is read, so --strategy can name a twin. Returns the setting ("" when unset;
// the runner records it as condbench_test_twin); a name that is no registered strategy throws
// condbench::Error naming the variable.
std::string register_test_twins();

}  // namespace condbench
