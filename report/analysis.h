#pragma once
// From result files to what the report shows: latency tables per model and batch, the winner of
// each (device, batch, model, scenario), the sentences that say it, and where the time goes (the
// A/B comparison of two runs: comparison.h). Plain data, no formatting beyond the sentences, so
// tests check exact values. Declared here, defined by job: verdicts.cpp (cells and the verdict
// rule), groups.cpp (groups and their winners), answer.cpp (the answer, its pairs, the budget's
// cells, the recommendations), floors.cpp (what a cell cannot beat), wording.cpp (numbers in words).
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "result_file.h"
#include "statistics.h"

namespace condbench::report {

// What bounds a cell's time: the CPU itself (a CPU cell), the host (a GPU cell whose host time,
// wall less gpu_us, exceeds its device time, or that waits on the host mid-inference), or the device.
// Host-bound cells drift with the host's scheduling, device-bound ones with the GPU's clocks: each
// class gets its own measured drift allowance (stability.h's calibrate).
enum class Bound { cpu, host, device };
const char* to_string(Bound bound);

struct Cell {
  double median_us = 0, cv = 0, q1_us = 0, q3_us = 0;
  size_t repetitions = 0;
  MedianInterval interval;  // of the median
  bool unstable = false;    // cv above the threshold the groups were made with: a label, never a veto
  size_t outliers = 0;      // repetitions far outside the cell's own spread (count_outliers): shown, never dropped
  std::map<std::string, double> counters;
  std::vector<double> times_us;  // every repetition, for the interval of a ratio
  // Where the repetitions were measured: the index of their file among the report's inputs, and
  // whether that file's repetitions were randomly interleaved with every other cell's (condbench's
  // random interleaving, the peer's shuffled rounds). Two cells of one interleaved file saw the same
  // machine; any other two may have seen it at different speeds (drift_allowance).
  size_t file = 0;
  bool interleaved = false;
  // The lockstep its file was timed in (condbench.lockstep: its rounds in turns with another process's,
  // whose file names the same), or "". Two interleaved cells of one lockstep saw the machine alike too.
  std::string lockstep;
  // The allowance a pair across that lockstep's files gets (its context's condbench_lockstep_allowance:
  // what scripts/aa-check --lockstep measured on the machine; 1 where it measured none).
  double lockstep_allowance = 1;
  std::string name;  // the benchmark's name in its file (Series::name)
  // How many times the run that measured it judged the answer before it stopped (--answer-budget's
  // looks, from the file's context; 1 without a budget). Every verdict on it is made at the
  // confidence that many looks leave each (answer_confidence).
  size_t looks = 1;
  // The GPU's time per inference of each repetition (the gpu_us counter: device time back to back), and
  // the interval of its median; empty for a CPU cell, a file older than per-repetition GPU times repeats
  // one figure.
  std::vector<double> gpu_us;
  MedianInterval gpu_interval;
  Bound bound = Bound::cpu;
  // The drift its file's equal-work pairs of its bound showed (stability.h's calibrate): 1 when they
  // showed none beyond the minimum effect; and the pair that showed it, in words.
  double measured_drift = 1;
  std::string drift_shown_by;
  bool busy = false;  // its file was recorded on a busy machine: marked, never silenced
};

// A benchmark whose repetitions vary more than this (coefficient of variation) is labelled unstable:
// read it with care. A label, not a veto: judge() rests on the interval of a ratio, which holds the
// spread already (docs/statistics.md).
constexpr double kDefaultUnstableCv = 0.05;
// Below this change a difference is not reported, however sure: a 3% win is not worth a rewrite, and
// the spread between two runs of one build is larger than the spread within a run.
constexpr double kDefaultMinEffect = 0.05;
Cell make_cell(const std::vector<double>& times_us, double unstable_cv = kDefaultUnstableCv);
// "1 outlying repetition", "2 outlying repetitions": how the report shows Cell::outliers.
std::string outliers_text(size_t outliers);

// How much faster or slower the machine can be for one cell than for another, when the two were not
// measured interleaved: different processes (condbench and the peer), different runs, or a file whose
// repetitions ran back to back. Measured on this project's machine kind (docs/statistics.md, "The drift
// allowance", scripts/drift_allowance.py): across 432 pairs of PyTorch-peer cells doing identical work
// minutes apart without interleaving (the runs cpu-2026-12-01, -01b, -01c) the low edge of the interval
// of their ratio reached 1.67; two back-to-back condbench processes separated no cell. Within one
// interleaved file the allowance is 1: there identical work never reached a claim (the reference of
// 2026-12-02: 348 pairs in condbench, largest 1.043; 174 in the peer's rounds, largest 0.979).
constexpr double kDriftBetweenProcesses = 1.7;
// The rule's allowance for two cells: 1 within one interleaved file; between interleaved files of one
// lockstep, the allowance that lockstep was given (the larger of the two files' word); else
// kDriftBetweenProcesses.
double rule_drift(const Cell& a, const Cell& b);
// What a verdict allows: the rule's, or the drift either cell's equal-work pairs measured where that
// is larger (Cell::measured_drift).
double drift_allowance(const Cell& a, const Cell& b);

// --answer-budget (condbench and the peer) adds interleaved rounds over the cells of the answer's
// undecided comparisons and judges again: the first look after the run's own repetitions n, the next
// when those cells have 2n, the last at 4n or when the budget is spent. A comparison judged at up to
// kAnswerLooks looks keeps the chance of a false claim at 1 - kRatioConfidence by judging each look at
// 1 - (1 - kRatioConfidence) / kAnswerLooks (Bonferroni). A run that added rounds records the looks
// its verdicts were split over (kAnswerLooks, however many it reached) in its context; the report
// judges its cells at the same confidence.
constexpr size_t kAnswerLooks = 3;
constexpr const char* kAnswerLooksContext = "condbench_answer_looks";
constexpr const char* kAnswerBudgetContext = "condbench_answer_budget";  // what the budget did, in words
// The peer's notes, one a line: variants skipped, refused by the check against a model file's module, or
// run through a workaround in their place (python/condbench/peer.py).
constexpr const char* kPeerNotesContext = "condbench_peer_notes";
// The confidence each of `looks` looks judges at (Bonferroni: 1 - (1 - kRatioConfidence) / looks).
double look_confidence(size_t looks);
// The confidence of the interval judge() takes for two cells: kRatioConfidence, less per look made.
double answer_confidence(const Cell& a, const Cell& b);

// Two cells are called the same only when the whole interval of their ratio, widened by the drift
// allowance, lies inside [1 / kEquivalenceMargin, kEquivalenceMargin]: an equivalence test (two
// one-sided tests at the interval's confidence, TOST), not the absence of a difference. Chosen from
// this machine kind's identical work (docs/statistics.md, "The margin of sameness"): interleaved
// identical cells at 10 repetitions need a median margin of 1.21-1.33, so 10 repetitions here rarely
// show sameness; the answer budget's 40 narrow that to about 1.10-1.15, inside 1.2, and 1.2 stays
// below bioequivalence's 1.25.
constexpr double kEquivalenceMargin = 1.2;

// The one verdict rule of the report: the answer, the recommendations, the best-strategy map and
// --compare all judge two cells with it (docs/statistics.md, "Verdicts"). With [L, U] the interval of
// the ratio slow / fast (ratio_interval, 99%, less per look) and D the drift_allowance:
//   faster     L / D is at least 1 + min_effect: the faster cell is at least L / D times faster.
//   same       [L / D, U x D] lies inside [1 / kEquivalenceMargin, kEquivalenceMargin]: whatever the
//              difference is, it is smaller than the margin. Never between cells timed apart (D 1.7
//              alone is wider than the margin).
//   ambiguous  neither: too few repetitions for an interval, or an interval too wide or too close to
//              1 for either claim; `detectable` is the smallest ratio of medians this data could have
//              called faster, `cannot_exclude` the largest ratio it leaves possible.
// cv plays no part: it labels a cell, it does not veto a verdict.
enum class Standing { faster, same, ambiguous };
const char* to_string(Standing standing);
struct Judgement {
  Standing standing = Standing::ambiguous;
  bool first_faster = true;              // the first cell judge() was given has the lower median
  RatioInterval ratio;                   // slower / faster
  double confidence = kRatioConfidence;  // of `ratio` (answer_confidence)
  double drift = 1;                      // D
  bool drift_measured = false;           // D is a drift this run's equal-work pairs showed, above the rule's
  double factor = 0;                     // faster: L / D, the conservative factor
  // ambiguous: the smallest ratio of medians this data would have called (the slower cell's times scaled
  // until L / D reaches 1 + min_effect); infinite without an interval (too few repetitions).
  double detectable = std::numeric_limits<double>::infinity();
  // ambiguous: the largest difference, either way, the interval cannot exclude: max(U x D, D / L);
  // infinite without an interval.
  double cannot_exclude = std::numeric_limits<double>::infinity();
  size_t outliers = 0;  // outlying repetitions in the two cells (Cell::outliers)
  // Where the measured drift decides: the standing the rule's allowance alone gives, when it differs
  // (a verdict withheld), and the equal-work pair that measured the drift.
  std::optional<Standing> withheld;
  std::string withheld_by;
};
Judgement judge(const Cell& a, const Cell& b, double min_effect = kDefaultMinEffect);
// The same rule at a given allowance: what calibrate judges equal-work pairs with (drift 1).
Judgement judge_at(const Cell& a, const Cell& b, double drift, double min_effect = kDefaultMinEffect);
// Whether more repetitions could still turn an ambiguous judgement into a verdict: an interval without a
// bound yet, one whose high end still reaches the claim, one whose point estimate lies inside the margin
// of sameness (so a narrower interval could be the same), or one a cell's outlying repetition may have
// stretched. A ratio whose whole interval lies above 1 and below the claim between cells timed apart (a
// difference smaller than the drift allowance) stays ambiguous however long it runs.
bool could_decide(const Judgement& j, double min_effect = kDefaultMinEffect);
// A cell's median and its interval in words: "10.7 µs [7.1–12.1]", with its outliers if any.
std::string cell_figure(const Cell& c);
// The judgement in words, `fast` and `slow` naming the cells (with figures if wanted): "FAST is at least
// 3.1× faster than SLOW (ratio [3.4–4.0]×)", "FAST and SLOW take the same time …", "ambiguous between
// …: why, and the largest difference it cannot exclude".
std::string verdict_text(const Judgement& j, const std::string& fast, const std::string& slow, const Cell& f,
                         const Cell& s);

// The baseline of the speedups the report prints: LibTorch with the decision on the host.
constexpr const char* kEagerHost = "torch/eager_host";

// One table: a machine's device, a model and a batch size.
struct Group {
  std::string device_label;  // "cpu · AMD EPYC"
  int64_t batch = 0, blocks = 0;
  std::vector<BenchmarkName::Part> model;  // its axes, as BenchmarkId::model
  // Timed per generated token (a decoder's, docs/design.md §8; ResultFile::per_token): a cell is one
  // token per row, its answer table is at every batch, and its options are every way the run wrote
  // the per-token exit.
  bool per_token = false;
  std::vector<std::string> strategies;                        // "engine/strategy", in a stable order
  std::vector<std::string> scenarios;                         // exit:1.., then mix:early, mix:uniform, mix:late
  std::map<std::pair<std::string, std::string>, Cell> cells;  // (strategy, scenario)

  const Cell* cell(const std::string& strategy, const std::string& scenario) const;
  // median(eager_host) / median(strategy): > 1 means faster than eager_host (torch engine).
  std::optional<double> speedup_over_eager(const std::string& strategy, const std::string& scenario) const;
  // "hidden 64, 3 blocks": condbench::model_text of its axes; "mlp h64 ×3": model_short.
  std::string model_text() const;
  std::string model_short() const;
};

std::vector<Group> make_groups(const std::vector<ResultFile>& files, double unstable_cv = kDefaultUnstableCv);

struct Winner {
  std::string device_label, scenario;
  int64_t batch = 0;
  std::vector<BenchmarkName::Part> model;
  std::string strategy, runner_up;  // the lowest median and the next; runner_up empty when only one ran
  double median_us = 0;
  MedianInterval interval;
  bool unstable = false;               // the winner's own repetitions vary: a label
  std::vector<std::string> same;       // others judge() calls the same as the winner
  std::vector<std::string> ambiguous;  // others it cannot separate from the winner either way
  // The conservative factor over the runner-up (judge()'s L / D, > 1). 0 when the runner-up is the
  // same or ambiguous, or the winner ran alone.
  double margin = 0;
};
std::vector<Winner> best_strategies(const std::vector<Group>& groups);

// Per group, at its two ends (mix:early and mix:late where they ran, else its first and last
// scenario): the fastest strategy against eager_host (against the runner-up where eager_host is the
// fastest or did not run), judged.
struct Recommendation {
  const Group* group = nullptr;
  std::string scenario, best, other;
  Judgement judgement;  // judge(best, other)
};
std::vector<Recommendation> recommendations(const std::vector<Group>& groups);

// A verdict as a table shows it, from the first cell's side (judge(a, b)): "FASTER ≥46×" (a is at
// least that much faster: the conservative factor, the only one shown), "SLOWER ≥2.1×" (b is), "SAME"
// (inside the margin of sameness), "?" (ambiguous).
std::string status_text(const Judgement& j);
// What qualifies a verdict, a character each (verdict_legend says what): ‡ the cells were timed apart
// (the drift allowance between processes), † a cell has outlying repetitions, ◊ the two strategies run
// different kernels, ⚑ a cell was recorded on a busy machine, ⊘ withheld by the measured drift.
std::string marks_text(const Judgement& j, const Cell& a, const Cell& b, const std::string& strategy_a,
                       const std::string& strategy_b);
// Whose kernels a strategy runs: condbench's own ("native"), ATen's (torch/..., eager Python),
// Inductor's (aoti/..., torch.compile'd Python), ONNX Runtime's (python/ort_if). Two strategies of different kernels
// compare their kernels as much as their control flow (◊).
std::string kernels_of(const std::string& strategy);
// The legend of the verdicts and their marks, once per report: a line each.
std::vector<std::string> verdict_legend();

// The questions condbench exists for, answered from a run's data (docs/design.md §5): per group,
// each question a row and each of the answer's scenarios a verdict — which PyTorch option is
// fastest; a plain Python if against nested torch.cond; torch.cond through AOTInductor against
// eager; condbench's fastest against the best PyTorch option (batch 1); the decoder's per-token
// questions (every batch); on a GPU, IF nodes against masking, against the host's decision and
// against kernels that test a flag (every batch).
struct AnswerVerdict {
  std::string scenario, a, b;  // a is the side the status is told from
  Judgement judgement;         // judge(a, b)
};
struct AnswerRow {
  std::string label;  // the verdict table's row: "py_eager_if vs py_cond", "fastest with PyTorch"
  std::string topic;  // the question in words (--explain)
  bool fixed = true;  // the label names both cells (else each verdict names its own two)
  std::vector<AnswerVerdict> verdicts;
};
std::vector<AnswerRow> answer_rows(const Group& g);
// The full sentence of one verdict: the medians and intervals it rests on, the interval of their
// ratio, the allowance, and for an ambiguous one what the data could and could not have called.
std::string explain(const Group& g, const std::string& a, const std::string& b, const std::string& scenario);

// The answer's table for a group (nullopt where the group has none: not batch 1, or no PyTorch
// option; a decoder's has one at every batch, its rows every strategy): its rows are the PyTorch options, condbench's
// fastest strategy of each answer scenario and LibTorch's eager_host, fastest first in the first scenario; each row
// stands against the fastest of its column.
struct AnswerTable {
  std::vector<std::string> scenarios;  // answer_scenarios' exits: the first and the full depth
  std::vector<std::string> rows;
  std::vector<std::string> best;  // per scenario: the row with the lowest median
  std::string own_fastest;        // condbench's fastest in the first scenario (the floor's row)
};
std::optional<AnswerTable> answer_table(const Group& g);

// Every comparison the answer judges in a group: each row of its table against its column's fastest,
// and the pairs its sentences name. Each once, whichever order.
struct AnswerPair {
  std::string a, b, scenario;
};
std::vector<AnswerPair> answer_pairs(const Group& g);

// What --answer-budget runs more of: the names of the cells from file `file` (an index into the files
// the groups were made from) in the answer's comparisons that could_decide(), and every cell of that
// file the answer compares with one of those (so two cells judged without a drift allowance always
// had the same rounds). `undecided`, when given, counts those comparisons: the ones with a cell from
// that file.
std::vector<std::string> undecided_cells(const std::vector<Group>& groups, size_t file, size_t* undecided = nullptr);
// One look of a run that spends an answer budget: `files` are what the answer reads, the last the
// run's own so far, judged at kAnswerLooks looks; the names of its cells the next rounds run.
std::vector<std::string> cells_for_next_rounds(std::vector<ResultFile> files, size_t* undecided = nullptr);
// The budget's schedule, one for condbench's rounds (bench/answer_budget.cpp) and the peer's (which
// reads it from --undecided): after look `look` (1, 2, ...) of a run of `first_repetitions`
// repetitions, the rounds before the next look, which doubles the cells' repetitions.
size_t rounds_before_next_look(size_t look, size_t first_repetitions);
// What an answer budget did, for its result file's context and the terminal; the words are
// condbench-report's, for condbench and the peer alike (--undecided --spent gives the peer them).
struct BudgetSpent {
  size_t looks = 1, rounds = 0, cells = 0;  // cells: run again at least once
  size_t undecided_at_start = 0, undecided_at_end = 0;
  double seconds = 0;
  std::string text() const;
};
// What one exit test's trip to the host and back costs, from the CUDA primitives (a 4-byte read
// into pinned memory and a synchronisation); unmeasured without them.
std::string round_trip_sentence(const std::map<std::string, std::map<std::string, double>>& primitive_floors);
// What one cell times, of the groups `shown` keeps (all without it): "per inference", "per
// generated token", or "per inference, and per generated token for the decoder".
std::string timed_unit_text(const std::vector<Group>& groups, const std::function<bool(const Group&)>& shown = {});
// "Median wall time per inference in µs", or with both units "Median wall time in µs per inference, and ...".
std::string median_time_text(const std::vector<Group>& groups);
// What a PyTorch user can write, in a group: the Python peer's variants ("python/...") and the
// PyTorch modules deployed to C++ with torch.export and AOTInductor ("aoti/..."); and the
// scenarios the answer looks at: the first exit, the full depth (exit:1 and exit:<blocks+1>) and the
// uniform mix, where they ran.
bool is_pytorch_option(const std::string& strategy);
// The strategies among `names` that ran `scenario`, fastest (lowest median) first.
std::vector<std::string> by_median(const Group& g, const std::vector<std::string>& names, const std::string& scenario);
std::vector<std::string> pytorch_options(const Group& g);
std::vector<std::string> answer_scenarios(const Group& g);

// The primitives a run measured on a device (name -> median µs).
std::map<std::string, std::map<std::string, double>> primitive_floors(const std::vector<ResultFile>& files);

// What one core of a machine can do at most, from the run's primitive/cpu/... benchmarks.
struct CpuLimits {
  struct Read {
    std::string primitive;  // read_bandwidth_<size>
    double bytes = 0;       // the buffer read in one iteration
    double bytes_per_us = 0;
  };
  std::vector<Read> read;              // by buffer size
  std::optional<double> flops_per_us;  // fma_peak
  std::optional<double> torch_op_us;   // torch_op: one LibTorch operator call
  // Bytes per µs for a strategy that reads `bytes` per inference: the rate of the largest buffer
  // no larger than that (a smaller buffer is read at least as fast, so the floor stays a floor; the
  // closest one is the tightest), else the smallest buffer's. The primitive's own noise carries
  // over: a strategy can read a few percent faster than the buffer below it ("× floor" of 0.9).
  std::optional<double> read_rate(double bytes) const;
};
// By device label, for the devices whose run has CPU primitives.
std::map<std::string, CpuLimits> cpu_limits(const std::vector<ResultFile>& files);

// The least time an inference can take on one core, from what it did (its counters) and the
// machine's limits: the weights cannot come in faster than the read rate, the multiply-adds cannot
// go faster than the FMA peak, and each LibTorch operator call (the launches of the torch engine,
// and of the aoti engine: a package's calls of ATen kernels) costs at least torch_op. memory and
// compute overlap at best, so the floor is the larger plus the calls.
struct Floor {
  double us = 0, memory_us = 0, compute_us = 0, calls_us = 0;
  const char* bound() const;  // "memory", "compute" or "calls": the largest part
};
// nullopt where the cell lacks bytes_read or flops_executed, or the limits lack a rate.
std::optional<Floor> floor_of(const CpuLimits& limits, const Cell& cell, const std::string& engine);

// The least host time a GPU inference can take for what it issued, from the run's CUDA primitives:
// each counted launch (a kernel or graph launch on the native engine, `launch`; an ATen call on the
// torch and aoti engines, `torch_op`) and each host sync (a read back and a wait, read4_pinned_sync).
// Beside the device time (gpu_us) it says whether the host or the device bounds a cell. nullopt
// where the cell or the run lacks what it needs (a CPU cell, the peer's, a run without torch_op).
std::optional<double> host_floor_us(const std::map<std::string, double>& primitives, const Cell& cell,
                                    const std::string& engine);

// "6.1×", "55×": speedups as the sentences and tables print them.
std::string format_ratio(double ratio);
// "1.18×", "1.7×": a drift allowance, to three figures.
std::string format_drift(double drift);
// A lower bound on a ratio, rounded down so it never claims more than the data: 1.19 -> "19%",
// 6.38 -> "6.3×", 55.9 -> "55×".
std::string format_at_least(double ratio);

}  // namespace condbench::report
