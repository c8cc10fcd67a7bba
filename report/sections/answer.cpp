// The answer, first in the report: what a PyTorch user should write for an early exit, per model
// at batch 1 — a table of the options with their standings, a chart, and the verdicts in words.
#include <cmath>
#include <filesystem>
#include <sstream>

#include "condbench/error.h"
#include "section.h"

namespace condbench::report {

namespace {

// An option's standing against the fastest row of its column, in the answer's words.
std::string standing_text(const Group& g, const std::string& best, const std::string& option,
                          const std::string& scenario) {
  if (option == best) return "fastest";
  const Judgement j = judge(*g.cell(best, scenario), *g.cell(option, scenario));
  switch (j.standing) {
    case Standing::faster:
      return "≥" + format_at_least(j.factor) + " slower";
    case Standing::same:
      return "same as " + best;
    case Standing::ambiguous:
      break;
  }
  return std::isfinite(j.detectable)
             ? "ambiguous (could show ≥" + number(j.detectable) + "×, cannot exclude " + number(j.cannot_exclude) + "×)"
             : "ambiguous (too few repetitions)";
}

// The answer's chart: each option a dot at its median with the interval of the median as a
// whisker, one colour per scenario, options sorted as the table, log axis, the floor a triangle.
void answer_chart(const ReportInput& in, Charts& out, Document& doc, const Group& g, size_t index,
                  const std::vector<std::string>& rows, const std::vector<std::string>& scenarios,
                  const std::string& fastest) {
  if (!out.enabled()) return;
  std::ostringstream data;
  data << "option";
  for (const std::string& sc : scenarios) data << " " << gnuplot_label(sc) << " low high";
  for (const std::string& sc : scenarios) data << " " << gnuplot_label("floor " + sc);
  data << "\n";
  for (const std::string& s : rows) {
    data << gnuplot_label(s);
    for (const std::string& sc : scenarios) {
      const Cell* c = g.cell(s, sc);
      data << " "
           << (c ? number(c->median_us, 6) + " " + number(c->interval.low, 6) + " " + number(c->interval.high, 6)
                 : "NaN NaN NaN");
    }
    for (const std::string& sc : scenarios) {
      const Cell* c = s == fastest ? g.cell(s, sc) : nullptr;
      // The floor's value, NaN where there is none (a plain double: GCC 12 misreads an optional here).
      const double floor_us = c ? cell_floor(in, g, s, *c).value_or(Floor{NAN, 0, 0, 0}).us : NAN;
      data << " " << (std::isfinite(floor_us) ? number(floor_us, 6) : "NaN");
    }
    data << "\n";
  }
  const std::string id = chart_id(g, "answer", index);
  std::string plot = "plot ";
  const size_t n = scenarios.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string x = "($0" + std::string(i ? "+" : "-") + "0.12)";
    const std::string col = std::to_string(2 + 3 * i);
    plot += (i ? ", " : "") + std::string("'") + id + ".dat' using " + x + ":" + col + ":" + std::to_string(3 + 3 * i) +
            ":" + std::to_string(4 + 3 * i) + (i == 0 ? ":xtic(1)" : "") +
            " with yerrorbars pt 7 ps 1.3 lw 1.5 title columnheader(" + col + ")";
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string col = std::to_string(2 + 3 * n + i);
    plot += ", '" + id + ".dat' using ($0" + std::string(i ? "+" : "-") + "0.12):" + col +
            " with points pt 9 ps 1.6 lc rgb 'black' " + (i ? "notitle" : "title 'one-core floor'");
  }
  // Always a log axis: the options differ by factors, and a factor reads the same anywhere on it.
  const std::string settings = std::string("set logscale y\n") +
                               "set ylabel 'µs per inference (median, interval)'\nset xtics rotate by -60\n"
                               "set key inside bottom right\n"
                               "set offsets 0.5,0.5,0,0\nset bars small\nset key autotitle columnheader\n";
  out.draw(doc, id, data.str(), settings, plot, "The options as in the table: median, interval of the median, floor",
           "620,430");
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : separator) + p;
  return text;
}

// What --answer-budget did in each file that ran one, and what stayed ambiguous all the same, with
// the smallest ratio its data could have called.
void answer_budget(const ReportInput& in, Document& doc) {
  std::vector<std::string> said;
  for (const ResultFile& f : in.files)
    if (const auto it = f.context.find(kAnswerBudgetContext); it != f.context.end())
      said.push_back(std::filesystem::path(f.path).filename().string() + ": " + printable(it->second, 300));
  if (said.empty()) return;
  std::vector<std::string> open;
  for (const Group& g : in.groups)
    for (const AnswerPair& p : answer_pairs(g)) {
      const Judgement j = judge(*g.cell(p.a, p.scenario), *g.cell(p.b, p.scenario));
      if (j.standing != Standing::ambiguous) continue;
      const std::string& fast = j.first_faster ? p.a : p.b;
      const std::string& slow = j.first_faster ? p.b : p.a;
      open.push_back(g.model_text() + ", " + p.scenario + ": " + fast + " against " + slow +
                     (std::isfinite(j.detectable) ? " (could have called ≥" + number(j.detectable) + "×)"
                                                  : " (too few repetitions)"));
    }
  std::string text =
      "This run had an answer budget: interleaved rounds over the cells of the answer's undecided comparisons "
      "until each was decided (" +
      join(said, "; ") + "). ";
  text += open.empty() ? "Every comparison of the answer was decided."
                       : std::to_string(open.size()) + " stayed ambiguous: " + join(open, "; ") + ".";
  doc.paragraph(text);
}

// Correct before it is fast: where a compiled form computed other results than the module and a
// workaround's form was timed in its place (aoti/cond's build note), or the peer refused a variant on a
// model file or replaced it, said before the tables so that no one reads a workaround's time as the
// default's, or a missing row as a slow one.
void correctness_notes(const ReportInput& in, Document& doc) {
  std::vector<std::string> said;
  for (const ResultFile& f : in.files)
    for (const auto& [key, value] : f.context) {
      if (key.rfind("build:", 0) == 0 && value.find("; workaround: ") != std::string::npos)
        said.push_back(printable(key.substr(6), 200) + ": " +
                       printable(value.substr(value.find("; workaround: ") + 2), 600));
      if (key != kPeerNotesContext) continue;
      std::istringstream lines(value);
      for (std::string line; std::getline(lines, line);)
        if (line.find(" not run (") != std::string::npos || line.find(" runs in its place") != std::string::npos)
          said.push_back("python/" + printable(line, 400));
    }
  if (said.empty()) return;
  doc.paragraph(
      "Checked against the model's own forward before timing, some compiled forms were refused or "
      "replaced: " +
      join(said, "; ") + ".");
}

// First in the report: what a PyTorch user should write for an early exit, from this run's data.
// Per model at batch 1: one table (each option's median and its standing against the fastest),
// one chart, and at most four sentences that state the verdicts.
void the_answer(const ReportInput& in, Charts& out, Document& doc) {
  doc.paragraph(
      "What should a PyTorch user write for an early exit? Every row leaves at exit 1, or runs to the full depth. "
      "The PyTorch options (python/...: the peer's ways to write it; aoti/...: the same modules through "
      "torch.export and AOTInductor, run from C++), LibTorch's eager_host, condbench's fastest strategy and its "
      "one-core floor: median µs per inference [interval of the median] and the standing against the fastest "
      "(≥ N× slower; same, when the whole interval of the ratio lies inside the " +
      format_ratio(kEquivalenceMargin) +
      " margin; or ambiguous: docs/statistics.md, \"Verdicts\"). Cells timed in different processes or "
      "runs (condbench's against the peer's) are judged with a drift allowance of " +
      format_ratio(kDriftBetweenProcesses) +
      " (so they are never the same), cells of one interleaved run with none. A cell's outlying repetitions (far "
      "outside its own spread: a busy moment) are counted beside it and kept in its figures.");
  answer_budget(in, doc);
  correctness_notes(in, doc);
  bool any = false;
  for (size_t gi = 0; gi < in.groups.size(); ++gi) {
    const Group& g = in.groups[gi];
    const std::optional<AnswerTable> table = answer_table(g);
    if (!table) continue;
    any = true;
    doc.heading(3, group_title(g));
    if (decodes(g))
      doc.paragraph(
          "A decoder (docs/design.md §8): each cell is one decode step, one generated token for every row of the "
          "batch, in µs; the options are every way this run wrote the per-token exit.");
    const std::vector<std::string>& scenarios = table->scenarios;
    const std::vector<std::string>& rows = table->rows;
    const std::vector<std::string>& best = table->best;
    const std::string& fastest = table->own_fastest;
    Table t{{"option"}, {}};
    for (const std::string& sc : scenarios) {
      // "exit 1", "exit 4 (full depth)": every row leaves there
      t.header.push_back("exit " + sc.substr(sc.find(':') + 1) +
                         (sc == scenarios.back() && sc != scenarios.front() ? " (full depth)" : ""));
      t.header.push_back("standing");
    }
    for (const std::string& s : rows) {
      std::vector<std::string> row{s};
      for (size_t i = 0; i < scenarios.size(); ++i) {
        const Cell* c = g.cell(s, scenarios[i]);
        row.push_back(c ? number(c->median_us) + " " + interval_text(c->interval) +
                              (c->outliers ? " (" + outliers_text(c->outliers) + ")" : "")
                        : "-");
        row.push_back(c ? standing_text(g, best[i], s, scenarios[i]) : "-");
      }
      t.rows.push_back(row);
    }
    if (!fastest.empty()) {
      std::vector<std::string> row{"one-core floor of " + fastest};
      for (const std::string& sc : scenarios) {
        const Cell* c = g.cell(fastest, sc);
        const std::optional<Floor> f = c ? cell_floor(in, g, fastest, *c) : std::nullopt;
        row.push_back(f ? number(f->us) : "-");
        row.push_back("-");
      }
      t.rows.push_back(row);
    }
    doc.begin_side_by_side();
    doc.table(t);
    answer_chart(in, out, doc, g, gi, rows, scenarios, fastest);
    doc.end_side_by_side();
    doc.bullets(answer_sentences(g));
  }
  if (!any)
    doc.paragraph(
        "This report has no figures of the PyTorch peer or the aoti engine at batch 1, so it cannot say what to "
        "write with PyTorch: "
        "scripts/run runs the peer with condbench (--no-python skips it); give its result file to condbench-report "
        "beside condbench's.");
  doc.bullets({conditional_graphs_sentence(in.groups), round_trip_sentence(in.floors)});
}

}  // namespace

CONDBENCH_REPORT_SECTION(answer, "The answer: what to write for an early exit", 10, nullptr, the_answer);

}  // namespace condbench::report
