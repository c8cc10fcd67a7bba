#include "condbench/size_relation.h"

#include "condbench/error.h"

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

void SizeRelation::require(int size_value, int other_value) const {
  if (!holds(size_value, other_value)) fail(violation(size_value, other_value));
}

std::string SizeRelation::statement() const {
  std::string text = size + " must " + must() + " " + other;
  return why.empty() ? text : text + " (" + why + ")";
}

std::string SizeRelation::violation(int size_value, int other_value) const {
  return statement() + ", got " + size + "=" + std::to_string(size_value) + " " + other + "=" +
         std::to_string(other_value);
}

}  // namespace condbench
