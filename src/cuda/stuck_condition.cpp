#include "condbench/cuda/stuck_condition.h"

namespace condbench::cuda::testing {
namespace {
int stuck_level = -1;  // captures happen on the thread that prepares a strategy; tests hold one at a time
}  // namespace

int stuck_condition_level() { return stuck_level; }

StuckCondition::StuckCondition(int level) : previous_(stuck_level) { stuck_level = level; }

StuckCondition::~StuckCondition() { stuck_level = previous_; }

}  // namespace condbench::cuda::testing
