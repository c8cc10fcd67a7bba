#pragma once
// --answer-budget=SECONDS: after the run's own repetitions, interleaved rounds over the cells of the
// answer's undecided comparisons until each is decided (a verdict or a tie) or the budget is spent
// (report/analysis.h, kAnswerLooks, says how the looks keep the verdicts' confidence). Each round is
// one call of Google Benchmark with one repetition of each such cell, in a fresh random order; the
// record (run_record.h) makes them repetitions of the one run.
#include <string>

#include "analysis.h"
#include "run_record.h"

namespace condbench {

using report::BudgetSpent;  // report/analysis.h: its account in words is the report's

// `budget_s` > 0. `first_repetitions`: the repetitions each benchmark had in the run (the first look);
// `run_seconds`: how long the run took, from which a round's cost is estimated before the first.
// `argv0`: main's argv[0] (Google Benchmark keeps it).
BudgetSpent spend_answer_budget(RunRecord& record, double budget_s, int first_repetitions, double run_seconds,
                                char* argv0);

}  // namespace condbench
