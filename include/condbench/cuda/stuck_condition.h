#pragma once
// A fault for the tests to inject, so that a check of skipping is seen to fail: while a
// StuckCondition is alive, the conditional graphs captured (native and torch graph_cond,
// graph_while) keep the conditional that follows exit test `level` (0-based, one per block; in
// graph_cond the last one guards the final head) open even when no row is left — a nested IF
// stuck open. A WHILE loop still stops after the last block. The decoder's graph_cond holds its
// IF-ELSE after exit test `level` on the first branch (the next segment) the same way. Read at
// capture, so it changes only graphs captured while it is set; nothing outside the tests sets it.
namespace condbench::cuda::testing {

// The level held open, or -1 (the default: none).
int stuck_condition_level();

class StuckCondition {
 public:
  explicit StuckCondition(int level);
  ~StuckCondition();
  StuckCondition(const StuckCondition&) = delete;
  StuckCondition& operator=(const StuckCondition&) = delete;

 private:
  int previous_;
};

}  // namespace condbench::cuda::testing
