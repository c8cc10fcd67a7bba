#pragma once
// primitive/cpu/...: what one core of this machine can do at most, measured in the same run as the
// strategies, so the report can say how far each CPU figure is from the hardware's limit
// (docs/design.md, "Primitives and floors").
#include <string>
#include <vector>

namespace condbench {

std::vector<std::string> register_cpu_primitives();  // the names registered

}  // namespace condbench
