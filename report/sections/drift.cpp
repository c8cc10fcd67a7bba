// The drift allowance every verdict of the report used: the rule's, and what the run's own
// equal-work pairs measured (stability.h's calibrate), per file and per bound.
#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "section.h"

namespace condbench::report {

namespace {

void drift_allowance_section(const ReportInput& in, Charts& /*out*/, Document& doc) {
  doc.paragraph(
      "A strategy doing the same work in two scenarios (every work counter equal) is an A/A test: a verdict "
      "between its cells is the machine drifting. Each such pair is judged at no allowance.");
  doc.paragraph(
      "The largest factor their false claims show is the drift of their file and bound; every verdict on those "
      "cells allows at least that (the rule allows " +
      format_drift(kDriftBetweenProcesses) + " between cells timed apart). What it flips is withheld (⊘).");
  Table t{{"file", "bound", "timed", "equal-work pairs", "false claims", "drift shown", "shown by", "allowance"}, {}};
  for (const DriftClass& c : in.check.calibration.classes) {
    const ResultFile& f = in.files.at(c.file);
    const double rule = f.interleaved() ? 1.0 : kDriftBetweenProcesses;
    t.rows.push_back({std::filesystem::path(f.path).filename().string(), to_string(c.bound),
                      f.interleaved() ? "interleaved" : "in order", std::to_string(c.pairs), std::to_string(c.claims),
                      c.claims ? format_drift(c.shown) : "-", c.claims ? c.shown_by : "-",
                      format_drift(std::max(rule, c.shown)) + (c.shown > rule ? " (measured)" : " (the rule's)")});
  }
  doc.table(t);
  // The locksteps: files timed in turns, whose pairs across the two processes the rule judges as one run's.
  std::map<std::string, std::pair<std::vector<std::string>, double>> locksteps;
  for (const ResultFile& f : in.files)
    if (!f.lockstep().empty() && f.interleaved()) {
      auto& [names, allowance] = locksteps[f.lockstep()];
      names.push_back(std::filesystem::path(f.path).filename().string());
      allowance = std::max(allowance, f.lockstep_allowance());
    }
  for (const auto& [id, lockstep] : locksteps) {
    if (lockstep.first.size() < 2) continue;
    std::string files;
    for (const std::string& name : lockstep.first) files += (files.empty() ? "" : " and ") + name;
    doc.paragraph(files + " were timed in lockstep (" + id + "), round by round in turns: a pair across them allows " +
                  format_drift(lockstep.second) +
                  ", the allowance the lockstep was given (CONDBENCH_LOCKSTEP_ALLOWANCE: what scripts/aa-check "
                  "--lockstep measured on the machine; none unless given).");
  }
}

bool has_calibration(const ReportInput& in) { return !in.check.calibration.classes.empty(); }

}  // namespace

CONDBENCH_REPORT_SECTION(drift, "The drift allowance", 55, has_calibration, drift_allowance_section);

}  // namespace condbench::report
