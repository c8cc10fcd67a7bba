#pragma once
// Lockstep with another process (python -m condbench.lockstep, docs/statistics.md "Lockstep"): the
// coordinator hands out turns, one process at a time, so that condbench and the PyTorch peer time
// their rounds alternately on the same machine and neither is timed while the other runs. The
// coordinator gives each process CONDBENCH_LOCKSTEP=GO_FD,DONE_FD,ID: before each turn the process
// writes a byte to DONE_FD (its startup or last turn is over) and waits for one on GO_FD; its last
// turn ends when it exits. Without the variable a run is as it always was. Beside it,
// CONDBENCH_LOCKSTEP_ALLOWANCE: the drift allowance the report gives a pair across the two processes'
// files (a number >= 1: what scripts/aa-check --lockstep measured on the machine; 1 where it measured
// none), recorded in the result's context.
#include <optional>
#include <string>

namespace condbench {

class Lockstep {
 public:
  // The lockstep this process was started in, or nullopt; throws condbench::Error for a malformed
  // CONDBENCH_LOCKSTEP.
  static std::optional<Lockstep> from_environment();

  // Ends the turn this process holds (or its startup) and waits for the next. Throws condbench::Error
  // when the coordinator is gone (its end of the pipes closed): the run stops, it does not hang.
  void wait_turn();
  // The run's first round: the turn taken for the machine check before the run (run_benchmarks) is
  // that round's; every later round waits for one of its own.
  void round_turn(long round) {
    if (round > 0 || !holding_) wait_turn();
  }
  const std::string& id() const { return id_; }
  const std::string& allowance() const { return allowance_; }  // "1", "1.12"

 private:
  Lockstep(int go, int done, std::string id, std::string allowance)
      : go_(go), done_(done), id_(std::move(id)), allowance_(std::move(allowance)) {}
  int go_ = -1, done_ = -1;
  std::string id_, allowance_;
  bool holding_ = false;
};

// The process's lockstep, read once (nullptr without one); the runner waits for its turn through it.
Lockstep* lockstep();

}  // namespace condbench
