// Where the time goes, per group: each strategy's latency by scenario (median, interval, cv, speedup,
// distance from its floor), and at one scenario beside its counters, its floor and the primitives.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>

#include "condbench/counters.h"
#include "section.h"

namespace condbench::report {

namespace {

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

const char* const kFloorPrimitives[] = {"launch", "launch_sync", "graph_launch_sync", "read4_pinned_sync"};

void latency_by_scenario(const ReportInput& in, Charts& out, Document& doc) {
  const auto& groups = in.groups;
  const auto& unstable_cv = in.unstable_cv;
  const std::string confidence = confidence_text(groups), threshold = number(100 * unstable_cv, 3);
  doc.paragraph(median_time_text(groups) + "; each median's distribution-free interval (" + confidence +
                ") is its cell's title in the HTML, the chart draws the quartiles.");
  doc.paragraph("\"unstable\": the coefficient of variation exceeds " + threshold +
                "%; a label, since the verdicts rest on intervals of ratios, which hold the spread.");
  std::string machine;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    machine_heading(doc, 3, g, machine);
    doc.heading(4, group_heading(g));
    Table t{{"strategy"}, {}};
    for (const std::string& sc : g.scenarios) t.header.push_back(sc);
    std::ostringstream data;
    // Per scenario: each strategy's median, first and third quartile.
    data << "scenario";
    for (const std::string& s : g.strategies) data << " " << gnuplot_label(s) << " q1 q3";
    data << "\n";
    double lo = INFINITY, hi = 0;
    for (const std::string& s : g.strategies) {
      std::vector<std::string> row{s}, notes{""};
      for (const std::string& sc : g.scenarios) {
        const Cell* c = g.cell(s, sc);
        if (!c) {
          row.push_back("-");
          notes.push_back("");
          continue;
        }
        lo = std::min(lo, c->median_us);
        hi = std::max(hi, c->median_us);
        row.push_back(number(c->median_us) + (c->unstable ? " unstable" : ""));
        notes.push_back("interval of the median " + interval_text(c->interval) + " µs, " +
                        std::to_string(c->repetitions) + " repetitions, cv " + number(100 * c->cv, 2) + "%" +
                        (c->outliers ? ", " + outliers_text(c->outliers) : ""));
      }
      t.rows.push_back(std::move(row));
      t.notes.push_back(std::move(notes));
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
    if (out.enabled()) {
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
      out.draw(doc, id, data.str(), settings, plot, "Latency by exit scenario, " + group_title(g));
    }
  }
}

void where_the_time_goes(const ReportInput& in, Charts& out, Document& doc) {
  const auto& groups = in.groups;
  const auto& floors = in.floors;
  doc.paragraph("Each strategy at the uniform mix (or the first scenario) beside what it did " +
                timed_unit_text(groups) + "; the chart draws the run's primitives as floors. The columns:");
  std::vector<std::string> legend;
  for (const CounterSpec& spec : kCounters)
    if (spec.in_breakdown)
      legend.push_back(std::string(spec.name) + " (" + std::string(spec.unit) + "): " + std::string(spec.meaning));
  legend.push_back("wasted FLOPs: the share of flops_executed that no row needed (1 - flops_useful / flops_executed)");
  const bool any_gpu = std::any_of(groups.begin(), groups.end(), [](const Group& g) {
    return std::any_of(g.cells.begin(), g.cells.end(),
                       [](const auto& entry) { return entry.second.bound != Bound::cpu; });
  });
  if (any_gpu)
    legend.insert(legend.end(),
                  {"on a GPU, gpu_us: the median over the repetitions, with its interval",
                   "host floor (µs): the least the host takes to issue it: launches × the launch primitive (native) "
                   "or torch_op (torch, aoti), plus host_syncs × read4_pinned_sync",
                   "bound: host where the host's time (wall less gpu_us) exceeds the device's, or it waits on the "
                   "host; else device"});
  const bool any_limits = !in.limits.empty();
  if (any_limits)
    legend.insert(legend.end(),
                  {"floor (µs): the least one core takes for it, from this run's CPU primitives: the larger of "
                   "bytes_read at the read bandwidth (of the largest buffer no larger) and flops_executed at "
                   "fma_peak, plus launches × torch_op (torch, aoti: ATen calls)",
                   "bound: which of the three dominates; × floor: the median over the floor (1× is the machine's "
                   "limit; more threads than one can go below it)"});
  doc.bullets(legend);
  std::string machine;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    const std::string scenario = std::find(g.scenarios.begin(), g.scenarios.end(), "mix:uniform") != g.scenarios.end()
                                     ? "mix:uniform"
                                     : g.scenarios.front();
    machine_heading(doc, 3, g, machine);
    doc.heading(4, group_heading(g) + " · " + scenario);
    // The counters' own descriptions (condbench/counters.h) make the columns.
    Table t{{"strategy", "median (µs)"}, {}};
    for (const CounterSpec& spec : kCounters)
      if (spec.in_breakdown) t.header.emplace_back(spec.name);
    t.header.push_back("wasted FLOPs");
    const bool with_floor = in.limits.count(g.device_label) > 0;
    if (with_floor) t.header.insert(t.header.end(), {"floor (µs)", "bound", "× floor"});
    const bool on_gpu =
        std::any_of(g.cells.begin(), g.cells.end(), [](const auto& entry) { return entry.second.bound != Bound::cpu; });
    static const std::map<std::string, double> kNoPrimitives;
    const auto gpu_floors = floors.find(g.device_label);
    const std::map<std::string, double>& primitives = gpu_floors == floors.end() ? kNoPrimitives : gpu_floors->second;
    if (on_gpu) t.header.insert(t.header.end(), {"host floor (µs)", "bound"});
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
        if (spec.name == "gpu_us" && !c->gpu_us.empty()) {  // every repetition's: its median and interval
          std::string gpu = number(median(c->gpu_us));
          if (c->gpu_us.size() > 1) gpu.append(" ").append(interval_text(c->gpu_interval));
          row.push_back(gpu);
        } else if (spec.in_breakdown)
          row.push_back(number(counter(spec.name)));
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
      if (on_gpu) {
        const std::optional<double> host = host_floor_us(primitives, *c, s.substr(0, s.find('/')));
        row.insert(row.end(), {host ? number(*host) : "-", c->bound == Bound::cpu ? "-" : to_string(c->bound)});
      }
      any_floor = any_floor || floor.has_value();
      t.rows.push_back(std::move(row));
      data << gnuplot_label(s) << " " << number(c->median_us, 6) << " " << number(c->q1_us, 6) << " "
           << number(c->q3_us, 6) << " " << (floor ? number(floor->us, 6) : "NaN") << "\n";
      lo = std::min({lo, c->q1_us, floor ? floor->us : INFINITY});
      hi = std::max(hi, c->q3_us);
    }
    doc.table(t);
    if (out.enabled()) {
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
      out.draw(doc, id, data.str(),
               std::string(hi / std::max(lo, 1e-9) > 10 ? "set logscale y\n" : "set yrange [0:*]\n") +
                   "set ylabel 'latency (µs)'\nset xtics rotate by -30\nset offsets 0.5,0.5,0,0\nset bars small\n",
               plot, "Latency per strategy and primitive floors, " + group_title(g));
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

}  // namespace

CONDBENCH_REPORT_SECTION(latency, "Latency by scenario", 60, nullptr, latency_by_scenario);
CONDBENCH_REPORT_SECTION(time, "Where the time goes", 70, nullptr, where_the_time_goes);

}  // namespace condbench::report
