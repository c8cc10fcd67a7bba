#pragma once
// condbench's counters, each described once (docs/design.md §4): the runner writes every counter
// of this table into the result file, the runner's console table and condbench-report's "where
// the time goes" pick their columns by its flags, and the result file's context carries the
// descriptions, so a reader that does not know a counter can still say what it is.
//
// Adding a counter: a line in kCounters, and the place it is measured — a field of
// InferenceCounters that do_run adds to or of TokenCounters a token step adds to (source
// strategy), or the harness (exit ids, GPU timing).
// Torch-free: condbench-report uses it.
#include <cstddef>
#include <limits>
#include <string_view>

namespace condbench {

// What one inference did, as the strategy records it (Strategy::record) or the device reports it
// (Strategy::do_read_device_counters). FLOPs useful are a property of the exit ids (flops.h), not
// of the strategy, so the harness derives them.
struct InferenceCounters {
  double host_syncs = 0;
  double launches = 0;
  double flops_executed = 0;
  double bytes_read_back = 0;
  // Not every strategy knows what it reads: NaN is "not known", and the runner then leaves the
  // counter out. A strategy that knows assigns it (adding to NaN stays NaN).
  double bytes_read = std::numeric_limits<double>::quiet_NaN();
  // Blocks whose exit test the device ran, counted where it runs (in the exit test's kernel, or a
  // captured add in a conditional body); NaN where not counted.
  double blocks_run = std::numeric_limits<double>::quiet_NaN();
  // Heads the device evaluated, the final head included (an exit head and its test are one stage
  // with their block; the final head is a stage of its own), counted the same way; NaN where not
  // counted. With blocks_run it shows every conditional of a graph closed where it should.
  double heads_run = std::numeric_limits<double>::quiet_NaN();
};

// What one generated token did, summed over the batch's rows, as a token strategy records it
// (token_strategy.h; docs/design.md §8): a family timed per token, as the decoder is.
struct TokenCounters {
  double host_syncs = 0;         // exit decisions the host waited for (on the CPU: taken by host code)
  double layers_run = 0;         // layers run in full, summed over the rows
  double layers_propagated = 0;  // layers that only projected a left row's keys and values
  double heads_run = 0;          // LM head evaluations, summed over the rows
  double launches = 0;           // work the host issued: ATen operator calls (torch, aoti), plus graph replays
  double flops_executed = 0;     // every row's Linears and attention actually computed
  double bytes_read = 0;         // weights of what ran, once per step, plus the cache rows read
};

// Who measures a counter.
enum class CounterSource {
  strategy,    // a field of InferenceCounters, per inference, or of TokenCounters, per generated token
  exit_ids,    // the harness, from the exit ids an inference returned
  gpu_timing,  // the harness, from CUDA events around held-back inferences (CUDA strategies only)
  run_order,   // the harness: when a repetition ran, not what an inference did
};

// How the per-inference values become the number in the result file.
enum class Averaging {
  per_inference,  // mean over the timed inferences, each pool batch weighted by how often it ran
  per_row,        // the same, divided by the batch: a share of rows
  per_timed_run,  // one measurement over a run of inferences, divided by their number
  none,           // a label of the repetition, not an average (its aggregates mean nothing)
};

struct CounterSpec {
  std::string_view name;  // the result file's key
  std::string_view unit;
  CounterSource source;
  Averaging averaging;
  double InferenceCounters::*field;  // for source strategy: a family's; nullptr otherwise
  double TokenCounters::*step;       // for source strategy: a token family's (per token; per_row: per row)
  bool in_breakdown;                 // a column of the report's "where the time goes"
  std::string_view console;          // its column's heading in the runner's table; empty: not shown
  std::string_view meaning;          // one line
};

inline constexpr CounterSpec kCounters[] = {
    {"host_syncs", "waits", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::host_syncs,
     &TokenCounters::host_syncs, true, "syncs",
     "times the host waited for the device to decide an exit (on the CPU: exit decisions taken by host code)"},
    {"launches", "launches", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::launches,
     &TokenCounters::launches, true, "launches",
     "work the host issued: ATen operator calls, counted by a RecordFunction callback, for the torch and aoti "
     "engines (AOTInductor's generated kernels not included); kernel and graph launches, counted where they are "
     "issued, for the native engine; plus graph replays"},
    {"flops_executed", "FLOPs", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::flops_executed,
     &TokenCounters::flops_executed, false, "", "FLOPs of the Linears actually computed, all rows"},
    {"bytes_read_back", "bytes", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::bytes_read_back,
     nullptr, true, "",
     "bytes the host read back from the device to decide exits (on the CPU: the exit masks host code reads)"},
    {"bytes_read", "bytes", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::bytes_read,
     &TokenCounters::bytes_read, false, "",
     "bytes of weights and biases of the Linears computed, each once per inference whatever the batch, and the "
     "input: what an ideal cache would read from memory (the report's memory floor); absent where not known"},
    {"blocks_run", "blocks", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::blocks_run, nullptr,
     false, "",
     "blocks whose exit test ran, counted on the device (device_flag reaches every block, its kernels returning "
     "at once when no row is left): a conditional graph's proof that it skipped the rest; absent where not "
     "counted"},
    {"heads_run", "heads", CounterSource::strategy, Averaging::per_inference, &InferenceCounters::heads_run, nullptr,
     false, "",
     "heads (exit heads and the final head) the device evaluated, counted on the device like blocks_run: a "
     "conditional graph's proof that it skipped the final head when every row had left; absent where not counted"},
    {"layers_run", "layers", CounterSource::strategy, Averaging::per_row, nullptr, &TokenCounters::layers_run, false,
     "", "the decoder's layers run in full for a row's token (the rest only project its keys and values)"},
    {"layers_propagated", "layers", CounterSource::strategy, Averaging::per_row, nullptr,
     &TokenCounters::layers_propagated, false, "",
     "the decoder's layers that only projected a left row's keys and values for the deeper tokens to come"},
    {"exits_evaluated", "heads", CounterSource::strategy, Averaging::per_row, nullptr, &TokenCounters::heads_run, false,
     "", "the decoder's LM head evaluations for a row's token, its exits' and the final one's"},
    {"flops_useful", "FLOPs", CounterSource::exit_ids, Averaging::per_inference, nullptr, nullptr, false, "",
     "FLOPs of the Linears each row needed up to its own exit"},
    {"exit_mean", "exit id", CounterSource::exit_ids, Averaging::per_row, nullptr, nullptr, false, "exit",
     "mean exit id over the rows (1 = first exit)"},
    {"exit_", "share of rows", CounterSource::exit_ids, Averaging::per_row, nullptr, nullptr, false, "",
     "exit_K: the share of rows that left at exit K"},
    {"gpu_us", "µs", CounterSource::gpu_timing, Averaging::per_timed_run, nullptr, nullptr, true, "gpu us",
     "device time per inference, back to back: CUDA events around inferences enqueued behind a held stream "
     "(strategies that never wait on the host), after each repetition"},
    {"gpu_span_us", "µs", CounterSource::gpu_timing, Averaging::per_timed_run, nullptr, nullptr, true, "gpu span",
     "an inference's span on the GPU's timeline, from its first kernel to its last, the device's idle gaps "
     "while the host decides included (strategies that wait on the host mid-inference), after each repetition"},
    {"sequence", "position", CounterSource::run_order, Averaging::none, nullptr, nullptr, false, "",
     "the repetition's place in the order the run timed its repetitions (0 first; the PyTorch peer adds its "
     "round): interleaved, repetitions close in sequence ran close in time, so cells can be paired by time"},
    {"round", "round", CounterSource::run_order, Averaging::none, nullptr, nullptr, false, "",
     "with --rounds, the round the repetition belongs to (0 first): every cell has one repetition a round"},
};

}  // namespace condbench
