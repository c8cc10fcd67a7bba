#pragma once
// condbench's one memory budget (docs/input.md, "The memory budget"): the most a model, its
// inputs and a batch may ask for, in every tool and on every route — condbench, condbench-infer,
// and through rules.json the Python half (condbench.aoti --config, python -m condbench.decoder
// save, the peer). It is checked before anything is allocated: a flag or a file of a few bytes
// (--batch=65536, a state_dict that says context 16384) cannot make condbench ask the machine for
// more than it has; the refusal is one line naming the product and the budget, exit code 2.
//
// What a route holds is a sum of parts, each the product of named sizes ("rows", a family's axes,
// "num_classes", "blocks"; a decoder's sizes) times a constant: a family's MemoryTerms
// (ModelFamily::memory_terms, decoder_memory_terms) and its weights (every parameter's floats).
// The terms are data, so Python applies the same ones (rules.json's memory_budget).
// Torch-free.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace condbench {

// 8 GiB: a 16 GiB laptop runs condbench beside its system. The families' weights were capped at
// 2^31 floats (8 GiB) before; that cap is this budget.
inline constexpr double kMemoryBudgetBytes = 8.0 * 1024 * 1024 * 1024;
inline constexpr double kBytesPerFloat = 4;

// One part of what a model holds for `rows` rows: floats, the product of `factors` (sizes by name)
// times `times`.
struct MemoryTerm {
  std::string what;                  // "the key/value cache"
  std::vector<std::string> factors;  // "rows", "layers", "context", "d_model"
  double times = 1;                  // keys and values: 2
};

// The value of a size by name, for a term's factors; throws condbench::Error for a name it lacks.
using SizeOf = std::function<double(const std::string&)>;

// What one route asks for, part by part; checked against the budget before anything is allocated.
class MemoryNeed {
 public:
  // A part of `floats` floats, said as `product` ("8 layers x 64 context x 256 d_model x 2").
  MemoryNeed& add(const std::string& what, const std::string& product, double floats);
  // A term's floats at the sizes `size_of` gives.
  MemoryNeed& add(const MemoryTerm& term, const SizeOf& size_of);
  MemoryNeed& add_all(const std::vector<MemoryTerm>& terms, const SizeOf& size_of);
  // A model's, of either unit: its weights (`weights` floats), then for `rows` rows at once (0:
  // none) its `terms` at the sizes `size_of` gives.
  static MemoryNeed of_model(double weights, int64_t rows, const std::vector<MemoryTerm>& terms, const SizeOf& size_of);
  double bytes() const;
  // Throws condbench::Error, one line: "<who>: asks for 69 GiB, over condbench's memory budget of
  // 8 GiB (docs/input.md): the key/value cache 65536 rows x 8 layers x 64 context x 256 d_model x 2
  // floats = 64 GiB, ...", its largest parts first.
  void require(const std::string& who) const;

 private:
  struct Part {
    std::string what, product;
    double floats = 0;
  };
  std::vector<Part> parts_;
};

// "over condbench's memory budget of 8 GiB (docs/input.md)": every refusal's words (rules.json
// gives them to Python).
std::string memory_budget_statement();
// "69 GiB", "12.5 MiB": bytes as a refusal says them.
std::string bytes_text(double bytes);

}  // namespace condbench
