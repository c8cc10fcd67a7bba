#include "console_reporter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>

#include "condbench/counters.h"
#include "condbench/error.h"
#include "condbench/family.h"
#include "condbench/result_format.h"

namespace condbench {

namespace {

constexpr size_t kWidth = 100;

std::string clock_text(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

// Where a benchmark goes in the table: its block (sorted by key, titled) and its row.
struct Place {
  std::string block_key, block_title, row_key, row_label;
  std::string token_family = {};  // a strategy's benchmark timed per generated token: its family's name
};

std::string padded(const std::string& number) {
  return std::string(number.size() < 12 ? 12 - number.size() : 0, '0') + number;
}

// The family of a benchmark of `model` where its unit is a generated token, else "" (a model
// file's name, which no registry holds, is timed per inference).
std::string token_family(const std::vector<BenchmarkName::Part>& model) {
  std::string name = model_family(model);
  try {
    return !name.empty() && family(name).unit() == TimedUnit::token ? name : "";
  } catch (const Error&) {
    return "";
  }
}

Place place_of(const std::string& name) {
  std::optional<BenchmarkId> id;
  try {
    id = BenchmarkId::read(name);
  } catch (const Error&) {  // not condbench's shape: listed at the end as it is
  }
  if (!id) return {"9", "other", name, name};
  if (id->primitive) return {"0/" + id->device, id->device + " primitives", name, id->primitive_name};
  const std::string batch = std::to_string(id->batch);
  Place place;
  place.block_key = "1/" + id->device + "/" + model_order(id->model) + padded(batch);
  place.block_title = id->device + " · " + model_text(id->model) + " · batch " + batch;
  place.token_family = token_family(id->model);
  // by scenario (exit:1, exit:2, ... then the mixes), then by strategy
  place.row_key = padded(std::to_string(scenario_rank(id->scenario))) + "/" + id->strategy_key() + "/" + name;
  place.row_label =
      id->scenario + std::string(id->scenario.size() < 13 ? 13 - id->scenario.size() : 1, ' ') + id->strategy_key();
  return place;
}

double to_us(double time, benchmark::TimeUnit unit) { return time / benchmark::GetTimeUnitMultiplier(unit) * 1e6; }

}  // namespace

ConsoleReporter::ConsoleReporter(std::ostream& table, std::ostream& progress, size_t expected_runs, Progress style)
    : table_(table), progress_(progress), expected_runs_(expected_runs), style_(style) {}

std::string ConsoleReporter::number(double value) {
  if (!std::isfinite(value)) return "-";
  const double magnitude = std::fabs(value);
  int decimals = 0;
  if (magnitude > 0 && magnitude < 100 && value != std::round(value))
    decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
  std::ostringstream out;
  out << std::fixed << std::setprecision(decimals) << value;
  return out.str();
}

bool ConsoleReporter::ReportContext(const Context& /*context*/) {
  // The machine, the build and the flags are in the JSON's context; the terminal gets the table.
  start_ = std::chrono::steady_clock::now();
  return true;
}

void ConsoleReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    const std::string name(without_time_suffix(run.run_name.str()));
    if (run.error_occurred) {
      skipped_.emplace(name, run.error_message);
      if (run.run_type == Run::RT_Iteration) note_progress(run, 1);
      continue;
    }
    if (run.run_type == Run::RT_Iteration) {
      ++repetitions_seen_[name];
      note_progress(run, 1);
      // One repetition: the run is the row. With more, the median and cv aggregates replace it.
      if (run.repetitions <= 1) {
        Row& row = rows_[name];
        row.median_us = to_us(run.GetAdjustedRealTime(), run.time_unit);
        for (const auto& [key, counter] : run.counters) row.counters[key] = counter.value;
      }
      continue;
    }
    Row& row = rows_[name];
    if (run.aggregate_name == "median") {
      // --benchmark_display_aggregates_only shows no repetition: count them when their median comes
      const size_t seen = repetitions_seen_[name];
      if (static_cast<size_t>(run.repetitions) > seen) {
        repetitions_seen_[name] = static_cast<size_t>(run.repetitions);
        note_progress(run, static_cast<size_t>(run.repetitions) - seen);
      }
      row.median_us = to_us(run.GetAdjustedRealTime(), run.time_unit);
      for (const auto& [key, counter] : run.counters) row.counters[key] = counter.value;
    } else if (run.aggregate_name == "cv") {
      row.cv = run.real_accumulated_time;  // a fraction: Google Benchmark's percentage statistic
    }
  }
}

void ConsoleReporter::note_progress(const Run& run, size_t repetitions) {
  finished_runs_ += repetitions;
  if (style_ == Progress::none) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const size_t total = std::max(expected_runs_, finished_runs_);
  std::ostringstream line;
  line << "[" << finished_runs_ << "/" << total << "] " << clock_text(elapsed) << " elapsed";
  if (finished_runs_ < total)
    line << ", ~"
         << clock_text(elapsed / static_cast<double>(finished_runs_) * static_cast<double>(total - finished_runs_))
         << " left";
  line << "  " << without_time_suffix(run.run_name.str());
  std::string text = line.str();
  if (text.size() > kWidth - 1) text = text.substr(0, kWidth - 4) + "...";
  if (style_ == Progress::redrawn)
    progress_ << "\r\033[K" << text << std::flush;
  else
    progress_ << text << std::endl;  // a log reads a line each
}

void ConsoleReporter::Finalize() {
  if (style_ == Progress::redrawn && finished_runs_ > 0) progress_ << "\r\033[K" << std::flush;
  print_table();
}

void ConsoleReporter::print_table() {
  // block key -> title and rows (row key -> label, row)
  struct Block {
    std::string title;
    std::map<std::string, std::pair<std::string, const Row*>> rows;
  };
  std::map<std::string, Block> blocks;
  bool inferences = false;  // the timed units the strategies' blocks hold: inferences, tokens of these
  std::set<std::string> token_families;
  for (const auto& [name, row] : rows_) {
    if (skipped_.count(name)) continue;
    const Place place = place_of(name);
    Block& block = blocks[place.block_key];
    block.title = place.block_title;
    if (place.block_key.rfind("1/", 0) == 0) {
      if (place.token_family.empty())
        inferences = true;
      else
        token_families.insert(place.token_family);
    }
    // primitives by the size they read, then by name; strategies by scenario, then by name
    const auto bytes = row.counters.find("bytes");
    const std::string order =
        bytes == row.counters.end() ? "~" : padded(std::to_string(static_cast<long long>(bytes->second)));
    std::string row_key = place.row_key;
    if (place.block_key.rfind("0/", 0) == 0) row_key.insert(0, order + "/");
    block.rows[row_key] = {place.row_label, &row};
  }
  const auto cell = [](const std::string& text, size_t width) {
    return std::string(text.size() < width ? width - text.size() : 1, ' ') + text;
  };
  const auto counter = [](const Row& row, const std::string& key) {
    const auto it = row.counters.find(key);
    return it == row.counters.end() ? std::string("-") : number(it->second);
  };
  const auto cv_text = [](const Row& row) {
    if (row.cv < 0 || !std::isfinite(row.cv)) return std::string("-");
    char text[32];
    std::snprintf(text, sizeof text, row.cv < 0.1 ? "%.1f%%" : "%.0f%%", row.cv * 100);
    return std::string(text);
  };
  // The strategies' columns: the counters the counters table gives a console heading, each where a
  // row of the block has it (gpu_us only on a GPU).
  const auto columns = [](const Block& block) {
    std::vector<const CounterSpec*> shown;
    for (const CounterSpec& spec : kCounters)
      if (!spec.console.empty() && std::any_of(block.rows.begin(), block.rows.end(), [&](const auto& r) {
            return r.second.second->counters.count(std::string(spec.name)) > 0;
          }))
        shown.push_back(&spec);
    return shown;
  };
  const auto width = [](const CounterSpec& spec) { return std::max<size_t>(spec.console.size() + 2, 8); };
  constexpr size_t kLabel = 44;
  for (const auto& [key, block] : blocks) {
    const bool primitives = key.rfind("0/", 0) == 0;
    const std::vector<const CounterSpec*> shown = primitives ? std::vector<const CounterSpec*>() : columns(block);
    std::string title = block.title;
    if (title.size() >= kLabel) {  // a long model (the decoder's): lines of its own, the columns' heads below
      while (title.size() > kWidth) {
        const size_t cut = title.rfind(", ", kWidth - 1);
        if (cut == std::string::npos) break;
        table_ << "\n" << title.substr(0, cut + 1);
        title.erase(0, cut + 2);
      }
      table_ << "\n" << title;
      title.clear();
    }
    title += std::string(kLabel - title.size(), ' ');
    table_ << "\n" << title << cell("median us", 11) << cell("cv", 8);
    if (primitives) table_ << cell("rate", 14);
    for (const CounterSpec* spec : shown) table_ << cell(std::string(spec->console), width(*spec));
    table_ << "\n";
    for (const auto& [row_key, labelled] : block.rows) {
      const auto& [label, row] = labelled;
      std::string text = "  " + label;
      if (text.size() > kLabel - 1) text = text.substr(0, kLabel - 4) + "...";
      table_ << text << std::string(kLabel - text.size(), ' ') << cell(number(row->median_us), 11)
             << cell(cv_text(*row), 8);
      if (primitives) {
        // what the primitive moved or computed per iteration, per second
        std::string rate;
        if (row->counters.count("bytes")) rate = number(row->counters.at("bytes") / row->median_us / 1e3) + " GB/s";
        if (row->counters.count("flops")) rate = number(row->counters.at("flops") / row->median_us / 1e3) + " GFLOP/s";
        table_ << cell(rate.empty() ? "-" : rate, 14);
      }
      for (const CounterSpec* spec : shown) table_ << cell(counter(*row, std::string(spec->name)), width(*spec));
      table_ << "\n";
    }
  }
  const bool tokens = !token_families.empty();
  if (inferences && tokens) {
    std::string families;  // "the decoder", "the decoder and the ssm"
    for (const std::string& f : token_families) families += (families.empty() ? "the " : " and the ") + f;
    table_ << "\nmedian wall time per inference, and per generated token for " << families
           << "; cv across repetitions;\n"
              "the other columns are counters of the same unit (docs/design.md §4; every counter is in the JSON:\n"
              "--benchmark_out)\n";
  } else if (inferences || tokens)
    table_ << "\nmedian wall time per " << (tokens ? "generated token" : "inference")
           << "; cv across repetitions; the other columns are counters per\n"
           << (tokens ? "generated token" : "inference")
           << " (docs/design.md §4; every counter is in the JSON: --benchmark_out)\n";
  else if (!blocks.empty())
    table_ << "\nmedian wall time per iteration; cv across repetitions\n";
  // the line's status, once: skipped where the message says so ("skipped: ...", which is no failure:
  // RunRecord::failures), else an error ("error: ..." or any other message)
  for (const auto& [name, message] : skipped_) {
    const bool skipped = message.rfind("skipped: ", 0) == 0, error = message.rfind("error: ", 0) == 0;
    table_ << (skipped ? "skipped  " : "error    ") << name << ": "
           << message.substr(skipped ? 9
                             : error ? 7
                                     : 0)
           << "\n";
  }
  table_ << std::flush;
}

}  // namespace condbench
