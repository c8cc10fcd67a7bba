#include "condbench/size_relation.h"

namespace condbench {

bool SizeRelation::holds(int size_value, int other_value) const {
  switch (kind) {
    case Kind::kDivides:
      return size_value != 0 && other_value % size_value == 0;
    case Kind::kBelow:
      return size_value < other_value;
  }
  return false;
}

const char* SizeRelation::must() const { return kind == Kind::kDivides ? "divide" : "be below"; }

std::string SizeRelation::violation(int size_value, int other_value) const {
  std::string text = size + " must " + must() + " " + other;
  if (!why.empty()) text += " (" + why + ")";
  return text + ", got " + size + "=" + std::to_string(size_value) + " " + other + "=" + std::to_string(other_value);
}

}  // namespace condbench
