#include "condbench/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "condbench/error.h"

namespace condbench {

namespace {
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}
}  // namespace

std::string bytes_text(double bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.3g %s", bytes, kUnits[unit]);
  return text;
}

std::string memory_budget_statement() {
  return "over condbench's memory budget of " + bytes_text(kMemoryBudgetBytes) + " (docs/input.md)";
}

MemoryNeed& MemoryNeed::add(const std::string& what, const std::string& product, double floats) {
  parts_.push_back({what, product, floats});
  return *this;
}

MemoryNeed& MemoryNeed::add(const MemoryTerm& term, const SizeOf& size_of) {
  double floats = term.times;
  std::string product;
  for (const std::string& factor : term.factors) {
    const double value = size_of(factor);
    floats *= value;
    product += (product.empty() ? "" : " x ") + number(value) + " " + factor;
  }
  if (term.times != 1) product += (product.empty() ? "" : " x ") + number(term.times);
  return add(term.what, product, floats);
}

MemoryNeed& MemoryNeed::add_all(const std::vector<MemoryTerm>& terms, const SizeOf& size_of) {
  for (const MemoryTerm& term : terms) add(term, size_of);
  return *this;
}

MemoryNeed MemoryNeed::of_model(double weights, int64_t rows, const std::vector<MemoryTerm>& terms,
                                const SizeOf& size_of) {
  MemoryNeed need;
  need.add("the weights", number(weights), weights);
  if (rows > 0) need.add_all(terms, size_of);
  return need;
}

double MemoryNeed::bytes() const {
  double floats = 0;
  for (const Part& p : parts_) floats += p.floats;
  return floats * kBytesPerFloat;
}

void MemoryNeed::require(const std::string& who) const {
  const double total = bytes();
  if (total <= kMemoryBudgetBytes) return;
  std::vector<Part> largest = parts_;
  std::stable_sort(largest.begin(), largest.end(), [](const Part& a, const Part& b) { return a.floats > b.floats; });
  std::string said;
  for (const Part& p : largest) {
    if (p.floats * kBytesPerFloat < total / 100 && !said.empty()) break;  // what matters, not every part
    said +=
        (said.empty() ? "" : "; ") + p.what + " " + p.product + " floats = " + bytes_text(p.floats * kBytesPerFloat);
  }
  fail(who + ": asks for " + bytes_text(total) + ", " + memory_budget_statement() + ": " + said);
}

}  // namespace condbench
