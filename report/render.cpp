#include "render.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "condbench/counters.h"
#include "condbench/error.h"
#include "condbench/output_file.h"
#include "stability.h"

namespace condbench::report {

namespace fs = std::filesystem;

namespace {

// A table written once and rendered both as Markdown and as HTML.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Text from a result file (names, context values, error messages) as Markdown that shows it
// literally: every character Markdown or inline HTML could act on is backslash-escaped, and line
// breaks become spaces, so a name can neither end a table row nor start a block.
std::string escape_markdown(const std::string& text) {
  auto word = [&](size_t i) { return i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])); };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      // dropped: no control character belongs in a report
    } else if (std::string_view("\\`*[]<>|#!&~").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else if (c == '_' && !(i > 0 && word(i - 1) && word(i + 1))) {
      out += "\\_";  // an underscore inside a word (torch/eager_host) is literal already
    } else {
      out += c;
    }
  }
  return out;
}

// A name as a gnuplot data-file label: only characters that no gnuplot syntax gives a meaning to
// (no quotes, spaces, '#', '@', '$', backquotes or escapes), the rest as '_'. Labels go only into
// data files, which gnuplot reads as data; the scripts hold nothing taken from a result file.
std::string gnuplot_label(const std::string& text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._:/+-").find(c) != std::string_view::npos
               ? c
               : '_';
  return out.empty() ? "_" : out.substr(0, 60);
}

std::string number(double value, int digits = 3) {
  if (!std::isfinite(value)) return "-";
  char text[64];
  if (std::abs(value) >= 1000)
    std::snprintf(text, sizeof text, "%.0f", value);  // 1523, not 1.52e+03
  else
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

// A cell that reads as a figure: "1.03", "1.03 unstable", "≥61×", "[0.32–0.43]", "31.5%".
bool number_like(const std::string& cell) {
  size_t i = 0;
  for (const std::string_view lead : {"\\[", "[", "≥", "≤", "~", "-", "+"})
    if (cell.compare(i, lead.size(), lead) == 0) i += lead.size();
  return i < cell.size() && (std::isdigit(static_cast<unsigned char>(cell[i])) || cell[i] == '.');
}

class Document {
 public:
  void heading(int level, const std::string& text) {
    md_ << std::string(level, '#') << " " << escape_markdown(text) << "\n\n";
    html_ << "<h" << level << ">" << escape_html(text) << "</h" << level << ">\n";
  }
  void paragraph(const std::string& text) {
    md_ << escape_markdown(text) << "\n\n";
    html_ << "<p>" << escape_html(text) << "</p>\n";
  }
  void bullets(const std::vector<std::string>& items) {
    html_ << "<ul>\n";
    for (const std::string& item : items) {
      md_ << "- " << escape_markdown(item) << "\n";
      html_ << "<li>" << escape_html(item) << "</li>\n";
    }
    md_ << "\n";
    html_ << "</ul>\n";
  }
  // Columns with no value in any row ("-" throughout: gpu_us on a CPU run) are left out; numbers
  // are right-aligned, text left-aligned.
  void table(const Table& t) {
    std::vector<size_t> shown;
    std::vector<bool> text;
    for (size_t c = 0; c < t.header.size(); ++c) {
      bool any = t.rows.empty(), numeric = true;
      for (const auto& row : t.rows) {
        if (c >= row.size() || row[c] == "-" || row[c].empty()) continue;
        any = true;
        numeric = numeric && number_like(row[c]);
      }
      if (!any) continue;
      shown.push_back(c);
      text.push_back(c == 0 || !numeric);
    }
    md_ << "|";
    for (const size_t c : shown) md_ << " " << escape_markdown(t.header[c]) << " |";
    md_ << "\n|";
    for (size_t i = 0; i < shown.size(); ++i) md_ << (text[i] ? ":---|" : "---:|");
    md_ << "\n";
    html_ << "<table>\n<tr>";
    for (size_t i = 0; i < shown.size(); ++i)
      html_ << (text[i] ? "<th class=\"t\">" : "<th>") << escape_html(t.header[shown[i]]) << "</th>";
    html_ << "</tr>\n";
    for (const auto& row : t.rows) {
      md_ << "|";
      html_ << "<tr>";
      for (size_t i = 0; i < shown.size(); ++i) {
        const std::string& cell = shown[i] < row.size() ? row[shown[i]] : std::string();
        md_ << " " << escape_markdown(cell) << " |";
        html_ << (text[i] ? "<td class=\"t\">" : "<td>") << escape_html(cell) << "</td>";
      }
      md_ << "\n";
      html_ << "</tr>\n";
    }
    md_ << "\n";
    html_ << "</table>\n";
  }
  // What comes between these two sits side by side in the HTML (a table and its chart); Markdown
  // has no columns and shows them one after the other.
  void begin_side_by_side() { html_ << "<div class=\"pair\">\n"; }
  void end_side_by_side() { html_ << "</div>\n"; }
  void chart(const std::string& file, const std::string& svg, const std::string& caption) {
    md_ << "![" << escape_markdown(caption) << "](" << file << ")\n\n";
    const size_t start = svg.find("<svg");
    html_ << "<figure class=\"chart\">" << (start == std::string::npos ? svg : svg.substr(start)) << "<figcaption>"
          << escape_html(caption) << "</figcaption></figure>\n";
  }
  std::string markdown() const { return md_.str(); }
  std::string html(const std::string& title) const {
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) +
           "</title>\n<style>body{font-family:sans-serif;max-width:1340px;margin:1em auto;padding:0 1em;color:#222}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
           "td.t,th.t{text-align:left}th{background:#f3f3f3}figure.chart svg{max-width:100%;"
           "height:auto}figcaption{color:#666;font-size:90%}div.pair{display:flex;flex-wrap:wrap;gap:0 1.5em;"
           "align-items:flex-start}div.pair table{font-size:14px}div.pair figure{margin:1em 0;flex:1 1 440px}"
           "</style></head><body>\n" +
           html_.str() + "</body></html>\n";
  }

 private:
  std::ostringstream md_, html_;
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail("cannot write " + path.string());
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs gnuplot on `script` inside `work` (no shell: the command line holds nothing to interpret),
// its output in `log`. Returns whether it succeeded. A SIGINT/SIGTERM while it runs stops it and
// throws Interrupted, so the report is abandoned rather than finished without its charts.
bool run_gnuplot(const std::string& gnuplot, const fs::path& work, const std::string& script, const std::string& log) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    if (::chdir(work.c_str()) != 0) ::_exit(127);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return false;
    if (const int signal = interrupted()) {
      ::kill(child, SIGTERM);
      ::waitpid(child, &status, 0);
      throw Interrupted(signal);
    }
  }
  throw_if_interrupted();  // the signal reached gnuplot too and ended it
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Draws one chart with gnuplot: `data` is the data file's text (labels from gnuplot_label only);
// `plot` the plot command, which refers to the data file as '<name>.dat'. Returns the SVG, or ""
// when gnuplot failed.
std::string draw(const std::string& gnuplot, const fs::path& work, const std::string& name, const std::string& data,
                 const std::string& settings, const std::string& plot, const std::string& size = "860,460") {
  write_text(work / (name + ".dat"), data);
  write_text(work / (name + ".gp"), "set terminal svg size " + size +
                                        " noenhanced font 'sans,13' background rgb 'white'\n"
                                        "set output '" +
                                        name +
                                        ".svg'\nset datafile missing 'NaN'\n"
                                        "set key outside right top\nset grid ytics\n" +
                                        settings + plot + "\n");
  const fs::path svg = work / (name + ".svg");
  if (!run_gnuplot(gnuplot, work, name + ".gp", name + ".log") || !fs::exists(svg)) return "";
  return read_text(svg);
}

std::string group_title(const Group& g) {
  if (!g.extra_axes.empty() && g.extra_axes.rfind("model:", 0) == 0)
    return g.device_label + " · batch " + std::to_string(g.batch) + " · " + g.model_text();
  return g.device_label + " · batch " + std::to_string(g.batch) + " · hidden " + std::to_string(g.hidden) + " · " +
         std::to_string(g.blocks) + " blocks" + (g.extra_axes.empty() ? "" : " · " + g.extra_axes);
}

std::string chart_id(const Group& g, const char* kind, size_t index) {
  return std::string(kind) + "-" + std::to_string(index) + "-b" + std::to_string(g.batch) + "-h" +
         std::to_string(g.hidden) + "-n" + std::to_string(g.blocks);
}

// "[1.2–2.1]": the interval of a median, or "-" without one.
std::string interval_text(const MedianInterval& interval) {
  if (!std::isfinite(interval.low) || !std::isfinite(interval.high)) return "-";
  return "[" + number(interval.low) + "–" + number(interval.high) + "]";
}

// What confidence the intervals in these groups reach, per number of repetitions: "93.8% with 5
// repetitions". Below 6 repetitions the interval is [min, max] and falls short of 95%.
std::string confidence_text(const std::vector<Group>& groups) {
  std::map<size_t, double> reached;
  for (const Group& g : groups)
    for (const auto& [key, c] : g.cells) reached[c.repetitions] = c.interval.confidence;
  std::string text;
  for (const auto& [n, confidence] : reached)
    text += (text.empty() ? "" : ", ") + number(100 * confidence, 3) + "% with " + std::to_string(n) + " repetitions";
  return text.empty() ? "no repetitions" : text;
}

// The machine's load as the run recorded it: load averages at the start and the end, on N CPUs.
std::string load_text(const ResultFile& f) {
  auto get = [&](const char* key) { return f.context.count(key) ? f.context.at(key) : std::string(); };
  const std::string cpus = get("num_cpus"), start = get("condbench_loadavg_start"), end = get("condbench_loadavg_end");
  std::string text;
  if (!start.empty()) text = "start " + start + (end.empty() ? "" : ", end " + end);
  double l1 = 0, l5 = 0, l15 = 0;  // older files: Google Benchmark's "[l1,l5,l15]" only
  if (text.empty() && std::sscanf(get("load_avg").c_str(), "[%lf,%lf,%lf]", &l1, &l5, &l15) == 3) {
    char loads[64];
    std::snprintf(loads, sizeof loads, "%.2f %.2f %.2f", l1, l5, l15);
    text = std::string("start ") + loads;
  }
  if (text.empty()) return "-";
  return text + (cpus.empty() ? "" : " on " + cpus + " CPUs");
}

const char* const kFloorPrimitives[] = {"launch", "launch_sync", "graph_launch_sync", "read4_pinned_sync"};

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / "gnuplot";
    if (!dir.empty() && fs::exists(candidate)) return candidate.string();
  }
  return "";
}

namespace {

// Everything a section reads: the result files and the analysis of them, made once.
struct ReportInput {
  const std::vector<ResultFile>& files;
  const std::vector<Group>& groups;
  const std::map<std::string, std::map<std::string, double>>& floors;  // device -> primitive -> µs
  const std::map<std::string, CpuLimits>& limits;                      // device -> one core's limits
  const RunCheck& check;
  double unstable_cv;
};

// Where a section draws its charts: gnuplot ("" for none), the charts folder, gnuplot's scratch.
struct Charts {
  std::string gnuplot;
  fs::path dir, work;
  int drawn = 0;
};

// The one-core floor of a strategy's cell, where the run measured the CPU primitives.
std::optional<Floor> cell_floor(const ReportInput& in, const Group& g, const std::string& strategy, const Cell& c) {
  const auto limits = in.limits.find(g.device_label);
  if (limits == in.limits.end()) return std::nullopt;
  return floor_of(limits->second, c, strategy.substr(0, strategy.find('/')));
}

// An option's standing against the fastest row of its column, in the answer's words.
std::string standing_text(const Group& g, const std::string& best, const std::string& option,
                          const std::string& scenario) {
  if (option == best) return "fastest";
  const Judgement j = judge(*g.cell(best, scenario), *g.cell(option, scenario));
  switch (j.standing) {
    case Standing::faster:
      return "≥" + format_at_least(j.factor) + " slower";
    case Standing::tied:
      return "tied with " + best;
    case Standing::ambiguous:
      break;
  }
  return std::isfinite(j.detectable) ? "ambiguous (could show ≥" + number(j.detectable) + "×)"
                                     : "ambiguous (too few repetitions)";
}

// The answer's chart: each option a dot at its median with the interval of the median as a
// whisker, one colour per scenario, options sorted as the table, log axis, the floor a triangle.
void answer_chart(const ReportInput& in, Charts& out, Document& doc, const Group& g, size_t index,
                  const std::vector<std::string>& rows, const std::vector<std::string>& scenarios,
                  const std::string& fastest) {
  if (out.gnuplot.empty()) return;
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
  const std::string svg = draw(out.gnuplot, out.work, id, data.str(), settings, plot, "620,430");
  if (svg.empty()) return;
  write_text(out.dir / (id + ".svg"), svg);
  doc.chart("charts/" + id + ".svg", svg, "The options as in the table: median, interval of the median, floor");
  ++out.drawn;
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
      said.push_back(fs::path(f.path).filename().string() + ": " + printable(it->second, 300));
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

// First in the report: what a PyTorch user should write for an early exit, from this run's data.
// Per model at batch 1: one table (each option's median and its standing against the fastest),
// one chart, and at most four sentences that state the verdicts.
void the_answer(const ReportInput& in, Charts& out, Document& doc) {
  doc.paragraph(
      "What should a PyTorch user write for an early exit? Every row leaves at exit 1, or runs to the full depth. "
      "The PyTorch options (python/...: the peer's ways to write it; aoti/...: the same modules through "
      "torch.export and AOTInductor, run from C++), LibTorch's eager_host, condbench's fastest strategy and its "
      "one-core floor: median µs per inference [interval of the median] and the standing against the fastest "
      "(≥ N× slower, tied or ambiguous: docs/statistics.md, \"Verdicts\"). Cells timed in different processes or "
      "runs (condbench's against the peer's) are judged with a drift allowance of " +
      format_ratio(kDriftBetweenProcesses) + ", cells of one interleaved run with none.");
  answer_budget(in, doc);
  bool any = false;
  for (size_t gi = 0; gi < in.groups.size(); ++gi) {
    const Group& g = in.groups[gi];
    const std::optional<AnswerTable> table = answer_table(g);
    if (!table) continue;
    any = true;
    doc.heading(3, group_title(g));
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
        row.push_back(c ? number(c->median_us) + " " + interval_text(c->interval) : "-");
        row.push_back(c && !in.check.disturbed() ? standing_text(g, best[i], s, scenarios[i]) : "-");
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
    if (in.check.disturbed())
      doc.paragraph(
          "No verdicts: this run was disturbed (see the top of the report), so its differences may be the "
          "machine's.");
    else
      doc.bullets(answer_sentences(g));
  }
  if (!any)
    doc.paragraph(
        "This report has no figures of the PyTorch peer or the aoti engine at batch 1, so it cannot say what to "
        "write with PyTorch: "
        "scripts/run runs the peer with condbench (--no-python skips it); give its result file to condbench-report "
        "beside condbench's.");
  doc.bullets({in.check.disturbed() ? "Conditional graphs: no verdict, this run was disturbed."
                                    : conditional_graphs_sentence(in.groups),
               round_trip_sentence(in.floors)});
}

void what_was_compared(const ReportInput& in, Charts& /*out*/, Document& doc) {
  Table runs{{"file", "GPU", "CPU", "threads", "torch", "CUDA runtime", "driver", "date", "revision", "load"}, {}};
  for (const ResultFile& f : in.files) {
    auto get = [&](const char* key) { return f.context.count(key) ? f.context.at(key) : std::string("-"); };
    // A CUDA version is the GPU's to claim: without one, the CUDA runtime LibTorch ships means nothing.
    const bool gpu = get("device_name") != "none" && get("device_name") != "-";
    runs.rows.push_back({fs::path(f.path).filename().string(), get("device_name"), get("cpu_model"), get("threads"),
                         get("torch_version"), gpu ? get("cuda_runtime_version") : "-",
                         gpu ? get("cuda_driver_version") : "-", get("date"), get("git_revision"), load_text(f)});
  }
  doc.table(runs);
}

// The strategies this report shows, each with what it does, as the files describe them
// ("strategy:<device>/<engine>/<name>" in the context; a file too old to say, says so).
void strategy_glossary(const ReportInput& in, Charts& /*out*/, Document& doc) {
  std::map<std::string, std::string> glossary;  // device/engine/name -> summary
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series) {
      if (s.primitive || !s.error.empty()) continue;  // a skipped benchmark shows nothing to explain
      const std::string key = s.device + "/" + s.strategy_key();
      const auto said = f.context.find("strategy:" + key);
      std::string& summary = glossary[key];
      if (said != f.context.end() && (summary.empty() || summary[0] == '('))
        summary = said->second;
      else if (summary.empty())
        summary = "(not in the result file: a condbench older than its glossary)";
    }
  Table t{{"strategy", "device", "what it does"}, {}};
  for (const auto& [key, summary] : glossary) {
    const size_t slash = key.find('/');
    t.rows.push_back({key.substr(slash + 1), key.substr(0, slash), summary});
  }
  doc.table(t);
  // What was built ahead of the run (AOTInductor packages): "build:<strategy> <model>" -> how.
  std::set<std::string> built;
  for (const ResultFile& f : in.files)
    for (const auto& [key, value] : f.context)
      if (key.rfind("build:", 0) == 0) built.insert(key.substr(6) + ": " + value);
  if (!built.empty()) {
    doc.paragraph("Built ahead of the run, outside the timed region:");
    doc.bullets(std::vector<std::string>(built.begin(), built.end()));
  }
}

void recommendations_section(const ReportInput& in, Charts& /*out*/, Document& doc) {
  const std::vector<std::string> sentences = recommendations(in.groups);
  if (in.check.disturbed()) {
    doc.paragraph("None: this run was disturbed (see the top of the report).");
  } else if (sentences.empty()) {
    doc.paragraph("No group has two strategies to compare.");
  } else {
    doc.bullets(sentences);
  }
}

void best_strategy(const ReportInput& in, Charts& /*out*/, Document& doc) {
  doc.paragraph(
      "The fastest strategy (lowest median wall time) for each device, model, batch and scenario, the "
      "interval of its median, and its margin over the runner-up: the conservative factor of the verdict rule "
      "(the low edge of the 99% interval of their ratio, over the drift allowance; see \"Verdicts\" in "
      "docs/statistics.md). Where the rule calls others tied with the winner, the cell says tie and names "
      "them; where it cannot separate them either way, it says so.");
  Table best{{"device", "batch", "hidden", "blocks", "scenario", "winner", "median (µs)", "interval (µs)", "margin",
              "runner-up"},
             {}};
  if (in.check.disturbed()) {
    doc.paragraph("None: this run was disturbed (see the top of the report).");
    return;
  }
  for (const Winner& w : best_strategies(in.groups)) {
    std::string winner = w.strategy + (w.unstable ? " (unstable)" : "");
    for (const std::string& t : w.tied) winner += ", " + t;
    if (!w.tied.empty()) winner = "tie: " + winner;
    if (!w.ambiguous.empty()) {
      std::string names;
      for (const std::string& a : w.ambiguous) names += (names.empty() ? "" : ", ") + a;
      winner += " (not separated from " + names + ")";
    }
    best.rows.push_back({w.device_label, std::to_string(w.batch), std::to_string(w.hidden), std::to_string(w.blocks),
                         w.extra_axes.empty() ? w.scenario : w.scenario + " · " + w.extra_axes, winner,
                         number(w.median_us), interval_text(w.interval),
                         w.margin > 0 ? "≥" + format_at_least(w.margin) : "-",
                         w.runner_up.empty() ? "-" : w.runner_up});
  }
  doc.table(best);
}

void latency_by_scenario(const ReportInput& in, Charts& out, Document& doc) {
  const auto& groups = in.groups;
  const auto& unstable_cv = in.unstable_cv;
  const std::string confidence = confidence_text(groups), threshold = number(100 * unstable_cv, 3);
  doc.paragraph(
      "Median wall time per inference in µs over the repetitions, in brackets the distribution-free "
      "confidence interval of the median (" +
      confidence +
      "), the coefficient of variation, \"unstable\" "
      "where that exceeds " +
      threshold +
      "% (a label that says to read the cell with care; the verdicts rest on the intervals of ratios, not on cv), "
      "and in parentheses the speedup of medians over "
      "torch/eager_host on the same device (above 1× is faster). Where the run measured the CPU "
      "primitives, \"× floor\" is the median over the strategy's one-core floor (see \"Where the time "
      "goes\").");
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    doc.heading(3, group_title(g));
    Table t{{"strategy"}, {}};
    for (const std::string& sc : g.scenarios) t.header.push_back(sc);
    std::ostringstream data;
    // Per scenario: each strategy's median, first and third quartile.
    data << "scenario";
    for (const std::string& s : g.strategies) data << " " << gnuplot_label(s) << " q1 q3";
    data << "\n";
    double lo = INFINITY, hi = 0;
    for (const std::string& s : g.strategies) {
      std::vector<std::string> row{s};
      for (const std::string& sc : g.scenarios) {
        const Cell* c = g.cell(s, sc);
        if (!c) {
          row.push_back("-");
          continue;
        }
        lo = std::min(lo, c->median_us);
        hi = std::max(hi, c->median_us);
        std::string text =
            number(c->median_us) + " " + interval_text(c->interval) + " ±" + number(100 * c->cv, 2) + "%";
        if (c->unstable) text += " unstable";
        if (auto up = g.speedup_over_eager(s, sc); up && s != "torch/eager_host")
          text += " (" + format_ratio(*up) + ")";
        if (const auto floor = cell_floor(in, g, s, *c))
          text += " · " + number(c->median_us / floor->us, 2) + "× floor";
        row.push_back(text);
      }
      t.rows.push_back(row);
    }
    for (const std::string& sc : g.scenarios) {
      data << gnuplot_label(sc);
      for (const std::string& s : g.strategies) {
        const Cell* c = g.cell(s, sc);
        if (c) {
          lo = std::min(lo, c->q1_us);
          hi = std::max(hi, c->q3_us);
        }
        data << " "
             << (c ? number(c->median_us, 6) + " " + number(c->q1_us, 6) + " " + number(c->q3_us, 6) : "NaN NaN NaN");
      }
      data << "\n";
    }
    doc.table(t);
    if (!out.gnuplot.empty()) {
      const std::string id = chart_id(g, "latency", gi);
      // Titles come from the data file's header line (columnheader), never from the script.
      // Scenarios are categories: no line joins them. Each strategy is a dot at its median with
      // a bar from the first to the third quartile, side by side within its scenario.
      const size_t n = g.strategies.size();
      const auto x = [&](size_t i) {
        const double offset = n > 1 ? 0.5 * (static_cast<double>(i) / static_cast<double>(n - 1) - 0.5) : 0.0;
        return "($0" + std::string(offset < 0 ? "" : "+") + number(offset, 3) + ")";
      };
      std::string plot = "plot ";
      for (size_t i = 0; i < n; ++i) {
        const std::string median = std::to_string(2 + 3 * i);
        plot += (i ? ", " : "") + std::string("'") + id + ".dat' using " + x(i) + ":" + median + ":" +
                std::to_string(3 + 3 * i) + ":" + std::to_string(4 + 3 * i) + (i == 0 ? ":xtic(1)" : "") +
                " with yerrorbars pt 7 ps 1.2 lw 1.5 title columnheader(" + median + ")";
      }
      const std::string settings =
          std::string(hi / std::max(lo, 1e-9) > 10 ? "set logscale y\n" : "") +
          "set ylabel 'median latency (µs), bars: quartiles'\nset xtics rotate by -30\nset offsets 0.5,0.5,0,0\n"
          "set bars small\nset key autotitle columnheader\n";  // every plot skips the header line
      const std::string svg = draw(out.gnuplot, out.work, id, data.str(), settings, plot);
      if (!svg.empty()) {
        write_text(out.dir / (id + ".svg"), svg);
        doc.chart("charts/" + id + ".svg", svg, "Latency by exit scenario, " + group_title(g));
        ++out.drawn;
      }
    }
  }
}

void where_the_time_goes(const ReportInput& in, Charts& out, Document& doc) {
  const auto& groups = in.groups;
  const auto& floors = in.floors;
  doc.paragraph(
      "Per strategy at the uniform mix (or the first scenario run): latency beside host syncs and launches "
      "per inference and the share of executed FLOPs no row needed. Where the run has the primitive "
      "microbenchmarks, the chart draws them as floors. The columns:");
  std::vector<std::string> legend;
  for (const CounterSpec& spec : kCounters)
    if (spec.in_breakdown)
      legend.push_back(std::string(spec.name) + " (" + std::string(spec.unit) + "): " + std::string(spec.meaning));
  legend.push_back("wasted FLOPs: the share of flops_executed that no row needed (1 - flops_useful / flops_executed)");
  const bool any_limits = !in.limits.empty();
  if (any_limits)
    legend.push_back(
        "floor (µs): the least one core can take for what the strategy did, from this run's CPU primitives: "
        "the larger of bytes_read over the read bandwidth (the fastest read of a buffer between a quarter of "
        "those bytes and all of them) and "
        "flops_executed over fma_peak, plus launches × torch_op for the torch engine; bound: which of the three "
        "dominates; × floor: the median over the floor (1× is the machine's limit; with more threads than one a "
        "strategy can go below it)");
  doc.bullets(legend);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    const std::string scenario = std::find(g.scenarios.begin(), g.scenarios.end(), "mix:uniform") != g.scenarios.end()
                                     ? "mix:uniform"
                                     : g.scenarios.front();
    doc.heading(3, group_title(g) + " · " + scenario);
    // The counters' own descriptions (condbench/counters.h) make the columns.
    Table t{{"strategy", "median (µs)"}, {}};
    for (const CounterSpec& spec : kCounters)
      if (spec.in_breakdown) t.header.emplace_back(spec.name);
    t.header.push_back("wasted FLOPs");
    const bool with_floor = in.limits.count(g.device_label) > 0;
    if (with_floor) t.header.insert(t.header.end(), {"floor (µs)", "bound", "× floor"});
    std::ostringstream data;
    bool any_floor = false;
    double lo = INFINITY, hi = 0;  // the range the chart spans
    for (const std::string& s : g.strategies) {
      const Cell* c = g.cell(s, scenario);
      if (!c) continue;
      auto counter = [&](std::string_view k) {
        const auto it = c->counters.find(std::string(k));
        return it != c->counters.end() ? it->second : NAN;
      };
      std::vector<std::string> row = {s, number(c->median_us) + (c->unstable ? " unstable" : "")};
      for (const CounterSpec& spec : kCounters)
        if (spec.in_breakdown) row.push_back(number(counter(spec.name)));
      const double executed = counter("flops_executed"), useful = counter("flops_useful");
      const double wasted = executed > 0 ? 1.0 - useful / executed : NAN;
      row.push_back(std::isfinite(wasted) ? number(100 * wasted, 3) + "%" : "-");
      const std::optional<Floor> floor = cell_floor(in, g, s, *c);
      if (with_floor) {
        if (floor)
          row.insert(row.end(), {number(floor->us), floor->bound(), number(c->median_us / floor->us, 2) + "×"});
        else
          row.insert(row.end(), {"-", "-", "-"});
      }
      any_floor = any_floor || floor.has_value();
      t.rows.push_back(std::move(row));
      data << gnuplot_label(s) << " " << number(c->median_us, 6) << " " << number(c->q1_us, 6) << " "
           << number(c->q3_us, 6) << " " << (floor ? number(floor->us, 6) : "NaN") << "\n";
      lo = std::min({lo, c->q1_us, floor ? floor->us : INFINITY});
      hi = std::max(hi, c->q3_us);
    }
    doc.table(t);
    if (!out.gnuplot.empty()) {
      const std::string id = chart_id(g, "time", gi);
      // A dot at the median with a bar from the first to the third quartile; the floor a triangle.
      std::string plot =
          "plot '" + id + ".dat' using 0:2:3:4:xtic(1) with yerrorbars pt 7 ps 1.4 lw 1.5 title 'median, quartiles'";
      if (any_floor)
        plot += ", '" + id + ".dat' using 0:5 with points pt 9 ps 1.8 lc rgb 'black' title 'one-core floor'";
      if (floors.count(g.device_label))
        for (const char* p : kFloorPrimitives)
          if (floors.at(g.device_label).count(p))
            plot +=
                ", " + number(floors.at(g.device_label).at(p), 6) + " with lines lw 2 dt 2 title 'floor: " + p + "'";
      for (const char* p : kFloorPrimitives)
        if (floors.count(g.device_label) && floors.at(g.device_label).count(p))
          lo = std::min(lo, floors.at(g.device_label).at(p));
      const std::string svg =
          draw(out.gnuplot, out.work, id, data.str(),
               std::string(hi / std::max(lo, 1e-9) > 10 ? "set logscale y\n" : "set yrange [0:*]\n") +
                   "set ylabel 'latency (µs)'\nset xtics rotate by -30\nset offsets 0.5,0.5,0,0\nset bars small\n",
               plot);
      if (!svg.empty()) {
        write_text(out.dir / (id + ".svg"), svg);
        doc.chart("charts/" + id + ".svg", svg, "Latency per strategy and primitive floors, " + group_title(g));
        ++out.drawn;
      }
    }
  }
  if (!floors.empty()) {
    doc.heading(3, "Primitive floors");
    Table t{{"device", "primitive", "median (µs)", "rate"}, {}};
    for (const auto& [device, prims] : floors) {
      const auto limits = in.limits.find(device);
      // The reads first, from the smallest buffer to the largest, each with its rate.
      if (limits != in.limits.end())
        for (const CpuLimits::Read& r : limits->second.read)
          t.rows.push_back(
              {device, r.primitive, number(r.bytes / r.bytes_per_us), number(r.bytes_per_us / 1e3) + " GB/s"});
      for (const auto& [name, us] : prims) {
        if (limits != in.limits.end() && name.rfind("read_bandwidth_", 0) == 0) continue;
        const bool peak = name == "fma_peak" && limits != in.limits.end() && limits->second.flops_per_us;
        t.rows.push_back(
            {device, name, number(us), peak ? number(*limits->second.flops_per_us / 1e3) + " GFLOP/s" : "-"});
      }
    }
    doc.table(t);
  }
}

void skipped_benchmarks(const ReportInput& in, Charts& /*out*/, Document& doc) {
  size_t count = 0;
  std::string first;
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series)
      if (!s.error.empty() && count++ == 0) first = s.name + ": " + s.error;
  doc.paragraph(std::to_string(count) + " benchmarks did not run (for example: " + first + ").");
}

bool any_skipped(const ReportInput& in) {
  for (const ResultFile& f : in.files)
    for (const Series& s : f.series)
      if (!s.error.empty()) return true;
  return false;
}

// One section of the report: its heading, whether it has anything to say (nullptr: always), and
// what it writes under the heading. The report is this list, in order.
struct Section {
  const char* title;
  bool (*applies)(const ReportInput&);
  void (*write)(const ReportInput&, Charts&, Document&);
};

constexpr Section kSections[] = {
    {"The answer: what to write for an early exit", nullptr, the_answer},
    {"What was compared", nullptr, what_was_compared},
    {"Strategies", nullptr, strategy_glossary},
    {"Recommendations", nullptr, recommendations_section},
    {"Best strategy", nullptr, best_strategy},
    {"Latency by scenario", nullptr, latency_by_scenario},
    {"Where the time goes", nullptr, where_the_time_goes},
    {"Skipped", any_skipped, skipped_benchmarks},
};

}  // namespace

RenderResult write_report(const std::vector<ResultFile>& files, const std::string& dir, const std::string& gnuplot,
                          double unstable_cv) {
  RenderResult result;
  const fs::path out(dir);
  Charts charts{gnuplot, out / "charts", out / ".gnuplot"};
  if (!gnuplot.empty()) {
    fs::create_directories(charts.dir);
    fs::create_directories(charts.work);
  } else {
    result.notes.push_back("Charts were skipped: gnuplot is not installed (scripts/setup installs it).");
  }
  const std::vector<Group> groups = make_groups(files, unstable_cv);
  const auto floors = primitive_floors(files);
  const RunCheck check = check_run(files, groups);
  const auto limits = cpu_limits(files);
  const ReportInput input{files, groups, floors, limits, check, unstable_cv};
  result.disturbed = check.disturbed();

  Document doc;
  doc.heading(1, "condbench report");
  if (check.disturbed()) {
    doc.paragraph(
        "This run was disturbed, so this report gives no verdicts and no recommendations: its timings measure the "
        "machine "
        "as much as the code. Rerun on a quiet machine (see docs/trusting.md). "
        "The evidence:");
    doc.bullets(check.evidence);
  }
  if (!check.notes.empty()) doc.bullets(check.notes);
  for (const std::string& note : result.notes) doc.paragraph(note);
  for (const Section& section : kSections) {
    if (section.applies && !section.applies(input)) continue;
    doc.heading(2, section.title);
    section.write(input, charts, doc);
  }
  result.charts = charts.drawn;

  write_text(out / "report.md", doc.markdown());
  write_text(out / "report.html", doc.html("condbench report"));
  if (fs::exists(charts.work)) fs::remove_all(charts.work);
  return result;
}

std::string comparison_markdown(const std::vector<Comparison>& rows, const std::string& a, const std::string& b,
                                double min_effect, const std::vector<std::string>& warnings) {
  std::ostringstream md;
  md << "A: " << escape_markdown(a) << "\nB: " << escape_markdown(b) << "\n\n";
  for (const std::string& w : warnings) md << "WARNING: " << escape_markdown(w) << "\n\n";
  const auto percent = [](double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
    return std::string(text);
  };
  const auto change_text = [&](const ChangeSummary& c) {
    return percent(c.median_change) + " " +
           (std::isnan(c.interval.low) ? std::string("-")
                                       : "\\[" + percent(c.interval.low) + " – " + percent(c.interval.high) + "\\]");
  };
  // The headline: each strategy, all its benchmarks together, against the run's drift.
  const StrategyComparisons together = compare_strategies(rows, min_effect);
  md << "| strategy (all its benchmarks) | benchmarks | medians up / down | median change | against the drift "
        "| verdict |\n"
     << "|---|---:|---:|---|---|---|\n";
  for (const StrategyComparison& s : together.strategies)
    md << "| " << escape_markdown(s.strategy) << " | " << s.change.benchmarks << " | " << s.change.slower << " / "
       << s.change.faster << " | " << change_text(s.change) << " | "
       << (s.against_run ? change_text(*s.against_run) : std::string("-")) << " | " << to_string(s.decisive().verdict)
       << " |\n";
  md << "\nBy strategy: the median change over the strategy's benchmarks, with its distribution-free "
     << number(100 * kIntervalConfidence)
     << "% interval (a sign test); where the run has 3 or more strategies, the verdict is on the change against the "
        "drift (each benchmark's change divided by it), so that drift of the machine, which moves every strategy "
        "alike, is not called a change. FASTER/SLOWER when the whole interval lies beyond "
     << number(100 * min_effect, 3)
     << "%; fewer than 6 benchmarks cannot reach that (TOO FEW BENCHMARKS). This is the verdict "
        "--fail-on-regression counts.\n";
  const ChangeSummary& run = together.whole_run;
  md << "\nWhole run: " << change_text(run) << " over " << run.benchmarks << " benchmarks (" << run.slower << " up, "
     << run.faster << " down), " << to_string(run.verdict)
     << ". A shift of the whole run is a change to every strategy or the machine drifting between the runs; two runs "
        "cannot tell which, an A/A pair can.";
  if (together.drift) md << " Drift, the median of the strategies' median changes: " << percent(*together.drift) << ".";
  md << "\n";

  md << "\n| benchmark | A median (µs) | B median (µs) | change | B / A (99%) | verdict |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  for (const Comparison& c : rows) {
    const std::string ratio =
        c.ratio.bounded() ? "\\[" + number(c.ratio.low) + "–" + number(c.ratio.high) + "\\]" : std::string("-");
    md << "| " << escape_markdown(c.name) << " | " << number(c.median_a_us) << " | " << number(c.median_b_us) << " | "
       << percent(c.change) << " | " << ratio << " | " << to_string(c.verdict) << " |\n";
  }
  const ComparisonSummary sum = summarize(rows);
  md << "\nSummary: " << sum.faster << " faster, " << sum.slower << " slower, " << sum.same << " same, "
     << sum.ambiguous << " ambiguous, " << sum.too_few << " too few repetitions, of " << rows.size()
     << " (one by one, on the interval of the ratio B / A: FASTER/SLOWER when it lies beyond "
     << number(100 * min_effect, 3) << "% and the drift allowance between runs, "
     << format_ratio(kDriftBetweenProcesses) << "; SAME when it holds 1; see docs/statistics.md)\n";
  return md.str();
}

}  // namespace condbench::report
