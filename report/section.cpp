#include "section.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace condbench::report {

namespace {

std::vector<Section>& registry() {
  static std::vector<Section> sections;
  return sections;
}

}  // namespace

bool register_section(const Section& section) {
  registry().push_back(section);
  return true;
}

std::vector<Section> report_sections() {
  std::vector<Section> sections = registry();
  std::sort(sections.begin(), sections.end(), [](const Section& a, const Section& b) {
    return a.order != b.order ? a.order < b.order : std::strcmp(a.title, b.title) < 0;
  });
  return sections;
}

std::string group_title(const Group& g) { return g.device_label + " · " + group_heading(g); }

std::string group_heading(const Group& g) { return g.model_short() + " · batch " + std::to_string(g.batch); }

void machine_heading(Document& doc, int level, const Group& g, std::string& last) {
  if (g.device_label == last) return;
  last = g.device_label;
  doc.heading(level, g.device_label);
}

// Only the characters a file name and an HTML id take safely: a value from another machine may
// hold anything, and the group's place keeps ids unique whatever is dropped.
std::string chart_id(const Group& g, const char* kind, size_t index) {
  std::string id = std::string(kind) + "-" + std::to_string(index) + "-b" + std::to_string(g.batch);
  for (const BenchmarkName::Part& p : g.model) {
    std::string value;
    for (const char c : p.value)
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') value += c;
    if (!value.empty() && value.size() <= 16) id += "-" + value;
  }
  return id;
}

std::string interval_text(const MedianInterval& interval) {
  if (!std::isfinite(interval.low) || !std::isfinite(interval.high)) return "-";
  std::string text = "[";  // appended, not "[" + ...: GCC 12 warns wrongly (-Wrestrict) on that chain
  text += number(interval.low);
  text += "–";
  text += number(interval.high);
  return text + "]";
}

std::optional<Floor> cell_floor(const ReportInput& in, const Group& g, const std::string& strategy, const Cell& c) {
  const auto limits = in.limits.find(g.device_label);
  if (limits == in.limits.end()) return std::nullopt;
  return floor_of(limits->second, c, strategy.substr(0, strategy.find('/')));
}

}  // namespace condbench::report
