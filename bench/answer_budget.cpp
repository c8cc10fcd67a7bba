#include "answer_budget.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>

#include "analysis.h"
#include "benchmark_flags.h"
#include "condbench/error.h"
#include "lockstep.h"
#include "result_file.h"

namespace condbench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A Google Benchmark filter that selects exactly these benchmarks: their run names, with or without
// the time suffix Google Benchmark adds (/real_time, /manual_time).
std::string filter_for(const std::vector<std::string>& names) {
  std::string spec = "^(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) spec += '|';
    for (const char c : names[i]) {
      if (std::strchr(".[]{}()*+?^$|\\", c) != nullptr) spec += '\\';
      spec += c;
    }
  }
  return spec + ")(/[a-z_]+_time)?$";
}

std::vector<std::string> next_cells(const RunRecord& record, size_t* undecided) {
  try {
    return report::cells_for_next_rounds({report::parse_result_file("this run", record.document("json"))}, undecided);
  } catch (const Error&) {  // nothing the answer compares ran (primitives alone)
    *undecided = 0;
    return {};
  }
}

}  // namespace

BudgetSpent spend_answer_budget(RunRecord& record, double budget_s, int first_repetitions, double run_seconds,
                                char* argv0) {
  BudgetSpent spent;
  const Clock::time_point start = Clock::now();
  std::vector<std::string> cells = next_cells(record, &spent.undecided_at_start);
  spent.undecided_at_end = spent.undecided_at_start;
  if (cells.empty()) return spent;
  one_repetition_per_call(argv0);
  record.begin_rounds();
  // Until a round has run, a repetition costs what the run's own did on average.
  double per_repetition = run_seconds / static_cast<double>(std::max<size_t>(record.repetitions(), 1));
  std::set<std::string> run_again;
  const size_t first = static_cast<size_t>(std::max(first_repetitions, 1));
  bool out_of_time = false;
  for (size_t look = 1; look < report::kAnswerLooks && !cells.empty() && !out_of_time; ++look) {
    // The next look when these cells have twice the repetitions they had at this one.
    const size_t rounds = report::rounds_before_next_look(look, first);
    std::cerr << "condbench: answer budget, look " << look << " of " << report::kAnswerLooks << ": "
              << spent.undecided_at_end << " comparisons undecided, up to " << rounds << " rounds over " << cells.size()
              << " cells\n";
    const std::string filter = filter_for(cells);
    size_t ran_rounds = 0;
    for (; ran_rounds < rounds; ++ran_rounds) {
      if (seconds_since(start) + per_repetition * static_cast<double>(cells.size()) > budget_s) {
        out_of_time = true;
        break;
      }
      if (Lockstep* turns = lockstep()) turns->wait_turn();
      const Clock::time_point round_start = Clock::now();
      const size_t before = record.repetitions();
      benchmark::RunSpecifiedBenchmarks(&record, filter);
      const size_t ran = record.repetitions() - before;
      if (ran == 0) {  // every cell failed: nothing more to learn
        out_of_time = true;
        break;
      }
      per_repetition = seconds_since(round_start) / static_cast<double>(ran);
    }
    if (ran_rounds == 0) break;
    spent.rounds += ran_rounds;
    spent.looks = look + 1;
    run_again.insert(cells.begin(), cells.end());
    cells = next_cells(record, &spent.undecided_at_end);
  }
  spent.cells = run_again.size();
  spent.seconds = seconds_since(start);
  return spent;
}

}  // namespace condbench
