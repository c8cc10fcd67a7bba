// The answer, first in the report: what a PyTorch user should write for an early exit, per model —
// a table of the options with their standings, a chart, and a table of verdicts, one a question and
// scenario; the sentences behind them are condbench-report --explain's (and the HTML's titles).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "condbench/error.h"
#include "section.h"

namespace condbench::report {

namespace {

// An option's standing against the fastest row of its column: "fastest", "≥46× slower", "SAME" or
// "?", with the verdict's marks.
std::string standing_text(const Group& g, const std::string& best, const std::string& option,
                          const std::string& scenario) {
  if (option == best) return "fastest";
  const Cell &fast = *g.cell(best, scenario), &other = *g.cell(option, scenario);
  const Judgement j = judge(fast, other);
  const std::string status = j.standing == Standing::faster ? "≥" + format_at_least(j.factor) + " slower"
                             : j.standing == Standing::same ? "SAME"
                                                            : "?";
  std::string text = status;
  // ◊ left out: condbench's own fastest is in every table, and every other row runs other kernels
  std::string marks = marks_text(j, fast, other, best, option);
  if (const size_t at = marks.find("◊"); at != std::string::npos) marks.erase(at, std::string("◊").size());
  if (!marks.empty()) text.append(" ").append(marks);
  return text;
}

// A verdict table's cell: the status from the row's side, its marks; where the row's label does not
// name the two cells, the cell does ("aoti/cond vs python/ort_if: FASTER ≥1.2× ‡").
std::string verdict_cell(const Group& g, const AnswerRow& row, const AnswerVerdict& v) {
  std::string text = row.fixed ? std::string() : v.a;
  if (!row.fixed) text.append(" vs ").append(v.b).append(": ");
  text.append(status_text(v.judgement));
  const std::string marks = marks_text(v.judgement, *g.cell(v.a, v.scenario), *g.cell(v.b, v.scenario), v.a, v.b);
  if (!marks.empty()) text.append(" ").append(marks);
  return text;
}

// A scenario as a column's heading: "exit 1", "exit 4 (full depth)", "mix:uniform".
std::string column(const std::string& scenario, const std::vector<std::string>& scenarios, const Group& g) {
  if (scenario.rfind("exit:", 0) != 0) return scenario;
  const bool full = scenario == "exit:" + std::to_string(g.blocks + 1) && scenario != scenarios.front();
  return "exit " + scenario.substr(5) + (full ? " (full depth)" : "");
}

// The verdict table of a group: a row a question, a column a scenario.
void verdict_table(const Group& g, Document& doc) {
  const std::vector<AnswerRow> rows = answer_rows(g);
  if (rows.empty()) return;
  const std::vector<std::string> scenarios = answer_scenarios(g);
  Table t{{"question"}, {}};
  for (const std::string& sc : scenarios) t.header.push_back(column(sc, scenarios, g));
  for (const AnswerRow& row : rows) {
    // a fixed row names its two cells once, by their names alone ("py_eager_if vs py_cond")
    std::string label = row.label;
    if (row.fixed) {
      const AnswerVerdict& v = row.verdicts.front();
      const auto shown = [](const std::string& s) { return s.rfind("python/", 0) == 0 ? s.substr(7) : s; };
      label.append(" (").append(shown(v.a)).append(" vs ").append(shown(v.b));
      label.append(")");
    }
    std::vector<std::string> cells{label}, notes{row.topic};
    for (const std::string& sc : scenarios) {
      const auto v = std::find_if(row.verdicts.begin(), row.verdicts.end(),
                                  [&](const AnswerVerdict& x) { return x.scenario == sc; });
      cells.push_back(v == row.verdicts.end() ? "-" : verdict_cell(g, row, *v));
      notes.push_back(v == row.verdicts.end() ? "" : explain(g, v->a, v->b, sc));
    }
    t.rows.push_back(std::move(cells));
    t.notes.push_back(std::move(notes));
  }
  doc.table(t);
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
  // A row per comparison, its group named on the first of the group's rows; the ratio's interval and
  // what it cannot exclude are --explain's (and the HTML's title).
  Table open{{"group", "scenario", "pair (faster first)", "could have called"}, {}};
  for (const Group& g : in.groups) {
    bool named = false;
    for (const AnswerPair& p : answer_pairs(g)) {
      const Judgement j = judge(*g.cell(p.a, p.scenario), *g.cell(p.b, p.scenario));
      if (j.standing != Standing::ambiguous) continue;
      open.rows.push_back({named ? "" : g.device_label + " · " + group_heading(g), p.scenario,
                           (j.first_faster ? p.a : p.b) + " vs " + (j.first_faster ? p.b : p.a),
                           std::isfinite(j.detectable) ? "≥" + number(j.detectable) + "×" : "too few repetitions"});
      open.notes.push_back({"", "", explain(g, p.a, p.b, p.scenario), ""});
      named = true;
    }
  }
  doc.paragraph("Answer budget: " + join(said, "; ") + ".");
  doc.paragraph(open.rows.empty() ? "Every comparison of the answer was decided."
                                  : std::to_string(open.rows.size()) + " comparisons stayed undecided:");
  if (!open.rows.empty()) doc.table(open);
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
// Per machine, per model and batch: the options table (each option's median and its standing against
// the fastest), a chart, and the verdict table; the legend once.
void the_answer(const ReportInput& in, Charts& out, Document& doc) {
  doc.paragraph(
      "What should a PyTorch user write for an early exit? Per model and batch: the options (python/...: the "
      "peer's Python; aoti/...: the same modules through AOTInductor, run from C++; eager_host; condbench's "
      "fastest), each standing against its column's fastest.");
  const std::string per =
      timed_unit_text(in.groups, [](const Group& g) { return answer_table(g) || !answer_rows(g).empty(); });
  doc.paragraph(
      "Then a verdict per question: FASTER ≥N×, SAME or ?, with marks (\"Reading the verdicts\", below). Median "
      "µs [interval of the median] " +
      per + "; every row leaves at exit 1, at the full depth, or as the uniform mix.");
  // a ? that no interval could have decided (its times were valid): say so once, and what decides it
  size_t verdicts = 0, unbounded = 0;
  double confidence = 0;  // the highest asked for (an answer budget's later looks ask more)
  for (const Group& g : in.groups)
    for (const AnswerPair& p : answer_pairs(g)) {
      ++verdicts;
      const Judgement j = judge(*g.cell(p.a, p.scenario), *g.cell(p.b, p.scenario));
      if (j.ratio.valid && !j.ratio.bounded()) {
        ++unbounded;
        confidence = std::max(confidence, j.confidence);
      }
    }
  if (unbounded > 0)
    doc.paragraph(std::to_string(unbounded) + " of the " + std::to_string(verdicts) +
                  " verdicts are ? because their cells have too few repetitions for a " + number(100 * confidence) +
                  "% interval of their ratio (at 99%, 5 repetitions of each suffice; condbench runs 10 unless "
                  "--benchmark_repetitions says otherwise).");
  correctness_notes(in, doc);
  bool any = false;
  std::string machine;
  for (size_t gi = 0; gi < in.groups.size(); ++gi) {
    const Group& g = in.groups[gi];
    const std::optional<AnswerTable> table = answer_table(g);
    if (!table && answer_rows(g).empty()) continue;
    any = true;
    machine_heading(doc, 3, g, machine);
    doc.heading(4, group_heading(g));
    if (table) {
      const std::vector<std::string>& scenarios = table->scenarios;
      const std::string& fastest = table->own_fastest;
      Table t{{"option"}, {}};
      for (const std::string& sc : scenarios) {
        t.header.push_back(column(sc, scenarios, g));
        t.header.push_back("standing");
      }
      for (const std::string& s : table->rows) {
        std::vector<std::string> row{s}, notes{""};
        for (size_t i = 0; i < scenarios.size(); ++i) {
          const Cell* c = g.cell(s, scenarios[i]);
          row.push_back(c ? number(c->median_us) + " " + interval_text(c->interval) : "-");
          row.push_back(c ? standing_text(g, table->best[i], s, scenarios[i]) : "-");
          notes.push_back("");
          notes.push_back(c && s != table->best[i] ? explain(g, table->best[i], s, scenarios[i]) : "");
        }
        t.rows.push_back(std::move(row));
        t.notes.push_back(std::move(notes));
      }
      if (!fastest.empty() && std::any_of(scenarios.begin(), scenarios.end(), [&](const std::string& sc) {
            const Cell* c = g.cell(fastest, sc);
            return c && cell_floor(in, g, fastest, *c);
          })) {
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
      answer_chart(in, out, doc, g, gi, table->rows, scenarios, fastest);
      doc.end_side_by_side();
    }
    verdict_table(g, doc);
  }
  if (!any)
    doc.paragraph(
        "This report has no figures of the PyTorch peer or the aoti engine at batch 1, so it cannot say what to "
        "write with PyTorch: scripts/run runs the peer with condbench (--no-python skips it); give its result file "
        "to condbench-report beside condbench's.");
  // The legend after the tables, so that the first one is on the first screen; then what stayed open.
  doc.heading(3, "Reading the verdicts");
  doc.bullets(verdict_legend());
  doc.paragraph(round_trip_sentence(in.floors));
  answer_budget(in, doc);
}

}  // namespace

CONDBENCH_REPORT_SECTION(answer, "The answer: what to write for an early exit", 10, nullptr, the_answer);

}  // namespace condbench::report
