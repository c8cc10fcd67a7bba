#pragma once
// How two sizes of one model must relate, beside each size's own range: "heads must divide
// d_model". A family lists its relations once (Family::relations); C++
// checks them (ModelConfig::validate, DecoderConfig::validate) and condbench.aoti's --config
// receives them as data (rules.json's config_relations), so no other place writes them again.
#include <string>

namespace condbench {

struct SizeRelation {
  enum class Kind { kDivides, kBelow };

  std::string size;   // "heads"
  Kind kind;          // ... must divide ...
  std::string other;  // "d_model"
  std::string why;    // what it is for, said in the message ("an exit before the last layer"); may be empty

  bool holds(int size_value, int other_value) const;
  // Throws condbench::Error with violation() unless it holds.
  void require(int size_value, int other_value) const;
  // "heads must divide d_model (each head a slice of the width)"
  std::string statement() const;
  // "heads must divide d_model (each head a slice of the width), got heads=5 d_model=256"
  std::string violation(int size_value, int other_value) const;
  // The kind as rules.json names it: "divide", "be below" (what the statement says after "must").
  const char* must() const;
};

}  // namespace condbench
