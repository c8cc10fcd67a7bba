#include "condbench/error.h"

namespace condbench {

void fail(const std::string& message) { throw Error(message); }

}  // namespace condbench
