#include "run_record.h"

#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "condbench/error.h"
#include "condbench/output_file.h"
#include "statistics.h"

namespace condbench {

namespace {

using Run = benchmark::BenchmarkReporter::Run;

std::unique_ptr<benchmark::BenchmarkReporter> reporter_for(const std::string& format) {
  if (format == "json") return std::make_unique<benchmark::JSONReporter>();
    // Google Benchmark deprecates its CSV reporter but still offers --benchmark_out_format=csv; so do we.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (format == "csv") return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  if (format == "console") return std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  fail("--benchmark_out_format: '" + printable(format) + "' is not json, csv or console");
}

// Google Benchmark's four aggregates of one benchmark, over `reps` (its iteration runs, all of one
// name): mean, median and stddev of the per-iteration times and of each counter, and their cv.
std::vector<Run> aggregates_of(const std::vector<const Run*>& reps) {
  const auto stats = [](const std::vector<double>& x) {
    const double mean = report::mean(x);
    double squares = 0;
    for (double v : x) squares += (v - mean) * (v - mean);
    const double stddev = x.size() > 1 ? std::sqrt(squares / static_cast<double>(x.size() - 1)) : 0.0;
    return std::map<std::string, double>{
        {"mean", mean}, {"median", report::median(x)}, {"stddev", stddev}, {"cv", mean != 0 ? stddev / mean : 0.0}};
  };
  std::vector<double> real, cpu;
  std::map<std::string, std::vector<double>> counters;
  for (const Run* r : reps) {
    const double n = static_cast<double>(std::max<benchmark::IterationCount>(r->iterations, 1));
    real.push_back(r->real_accumulated_time / n);
    cpu.push_back(r->cpu_accumulated_time / n);
    for (const auto& [name, counter] : r->counters) counters[name].push_back(counter.value);
  }
  const auto real_stats = stats(real), cpu_stats = stats(cpu);
  std::map<std::string, std::map<std::string, double>> counter_stats;
  for (const auto& [name, values] : counters) counter_stats[name] = stats(values);
  std::vector<Run> out;
  for (const char* name : {"mean", "median", "stddev", "cv"}) {
    Run a = *reps.front();
    a.run_type = Run::RT_Aggregate;
    a.aggregate_name = name;
    a.repetitions = static_cast<int64_t>(reps.size());
    a.repetition_index = Run::no_repetition_index;
    const bool percent = std::string(name) == "cv";
    a.aggregate_unit = percent ? benchmark::kPercentage : benchmark::kTime;
    // Google Benchmark divides a time aggregate by the iterations when it prints it; a percentage not.
    const double scale = percent ? 1.0 : static_cast<double>(std::max<benchmark::IterationCount>(a.iterations, 1));
    a.real_accumulated_time = real_stats.at(name) * scale;
    a.cpu_accumulated_time = cpu_stats.at(name) * scale;
    for (auto& [counter, value] : a.counters) value.value = counter_stats.at(counter).at(name);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

bool RunRecord::ReportContext(const Context& context) {
  if (context_) return true;  // a later call of Google Benchmark: the same run
  context_.emplace(context);
  const bool ok = display_.ReportContext(context);
  if (!checkpoint_.empty()) write_checkpoint();
  return ok;
}

std::vector<std::pair<std::string, std::string>> RunRecord::failures() const {
  std::vector<std::pair<std::string, std::string>> failed;
  std::set<std::string> seen;
  for (const Run& run : runs_)
    if (run.error_occurred && run.error_message.rfind("skipped: ", 0) != 0 && seen.insert(run.run_name.str()).second)
      failed.emplace_back(run.run_name.str(), run.error_message);
  return failed;
}

void RunRecord::ReportRuns(const std::vector<Run>& runs) {
  std::vector<Run> numbered = runs;
  for (Run& run : numbered)
    if (run.run_type == Run::RT_Iteration && !run.error_occurred) {
      // A later call starts each benchmark at repetition 0 again; the record counts on.
      run.repetition_index = seen_[run.run_name.str()]++;
      run.repetitions = std::max(run.repetitions, run.repetition_index + 1);
      ++repetitions_;
    }
  for (const Run& run : numbered) runs_.push_back(run);
  if (display_aggregates_only_) {
    // As Google Benchmark shows it: a benchmark's repetitions hidden where it has aggregates (the main
    // run's repeated ones, and every round's, which add to those).
    std::erase_if(numbered, [&](const Run& run) {
      return run.run_type == Run::RT_Iteration && (run.repetitions > 1 || in_rounds_);
    });
    if (!numbered.empty()) display_.ReportRuns(numbered);
  } else {
    display_.ReportRuns(numbered);
  }
  if (!checkpoint_.empty() && !in_rounds_) write_checkpoint();
}

void RunRecord::Finalize() {
  if (!checkpoint_.empty() && in_rounds_) write_checkpoint();
}

void RunRecord::finish() {
  if (refresh_display_) {
    std::vector<Run> remade;
    for (const auto& [name, reps] : extended())
      for (Run& a : aggregates_of(reps)) remade.push_back(std::move(a));
    if (!remade.empty()) display_.ReportRuns(remade);
  }
  display_.Finalize();
  if (!checkpoint_.empty()) write_checkpoint();  // with the context added since the last
}

std::map<std::string, std::vector<const Run*>> RunRecord::extended() const {
  std::map<std::string, std::vector<const Run*>> reps;
  for (const Run& run : runs_)
    if (run.run_type == Run::RT_Iteration && !run.error_occurred) reps[run.run_name.str()].push_back(&run);
  // Google Benchmark gave the first repetition the count it made its aggregates over.
  std::erase_if(reps, [](const auto& entry) {
    return entry.second.front()->repetitions >= static_cast<int64_t>(entry.second.size());
  });
  return reps;
}

std::vector<Run> RunRecord::with_current_aggregates() const {
  // Runs as they came, but for a benchmark that got repetitions after Google Benchmark made its
  // aggregates: those made again over all its repetitions, after its last.
  const std::map<std::string, std::vector<const Run*>> more = extended();
  std::vector<Run> out;
  for (const Run& run : runs_) {
    const auto it = more.find(run.run_name.str());
    if (it == more.end()) {
      out.push_back(run);
    } else if (run.run_type == Run::RT_Iteration && !run.error_occurred) {
      out.push_back(run);
      out.back().repetitions = static_cast<int64_t>(it->second.size());  // as Google Benchmark numbers a set
      if (&run == it->second.back())
        for (Run& a : aggregates_of(it->second)) out.push_back(std::move(a));
    } else if (run.run_type != Run::RT_Aggregate) {
      out.push_back(run);
    }
  }
  return out;
}

std::string RunRecord::document(const std::string& format) const {
  std::ostringstream text, errors;
  const std::unique_ptr<benchmark::BenchmarkReporter> reporter = reporter_for(format);
  reporter->SetOutputStream(&text);
  reporter->SetErrorStream(&errors);
  if (context_) reporter->ReportContext(*context_);
  std::vector<Run> runs = with_current_aggregates();
  if (files_aggregates_only_) {
    std::set<std::string> aggregated;
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Aggregate) aggregated.insert(run.run_name.str());
    std::erase_if(runs, [&](const Run& run) {
      return run.run_type == Run::RT_Iteration && aggregated.count(run.run_name.str()) > 0;
    });
  }
  if (!runs.empty()) reporter->ReportRuns(runs);
  reporter->Finalize();
  return text.str();
}

void RunRecord::write_checkpoint() const {
  if (!context_ || checkpoint_failure_) return;  // nothing ran yet (no file rather than an empty one), or given up
  const std::string text = document("json");
  install_signal_cleanup();  // a Ctrl-C while the temporary exists removes it
  try {
    PendingFile file(checkpoint_);
    file.write(text);
    file.commit();
    checkpointed_ = repetitions_;
  } catch (const Error& e) {
    // The measurements matter more than their copy: the run goes on, --benchmark_out gets them all.
    checkpoint_failure_ = e.what();
    std::cerr << "condbench: --checkpoint-out: " << *checkpoint_failure_ << "; "
              << (checkpointed_ == 0 ? std::string("it holds nothing of this run")
                                     : "it holds the first " + std::to_string(checkpointed_) + " repetitions")
              << "; no more checkpoints, the run goes on\n";
  }
}

}  // namespace condbench
