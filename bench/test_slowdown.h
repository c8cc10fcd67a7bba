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

}  // namespace condbench
