// The model family registry (include/condbench/family.h): each family timed per inference registers
// itself from its own file in src/families/, with CONDBENCH_REGISTER_FAMILY; the decoder is built in.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/family.h"

namespace condbench {

namespace {
struct Registry {
  std::vector<std::unique_ptr<const ModelFamily>> owned;
  std::vector<const ModelFamily*> by_name;  // sorted: --help, the default suite and errors list them so
};

Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

bool register_family(std::unique_ptr<const ModelFamily> family) {
  Registry& r = registry();
  const auto at = std::lower_bound(r.by_name.begin(), r.by_name.end(), family->name(),
                                   [](const ModelFamily* f, const std::string& name) { return f->name() < name; });
  if (at != r.by_name.end() && (*at)->name() == family->name()) {
    std::fprintf(stderr, "condbench: two model families named '%s'\n", family->name().c_str());
    std::abort();  // static initialisation: nothing to throw to
  }
  r.by_name.insert(at, family.get());
  r.owned.push_back(std::move(family));
  return true;
}

const std::vector<const ModelFamily*>& model_families() { return registry().by_name; }

const std::vector<const Family*>& families() {
  // Built at the first call, after static initialisation registered every ModelFamily.
  static const std::vector<const Family*> all = [] {
    std::vector<const Family*> out(model_families().begin(), model_families().end());
    out.push_back(&decoder_family());
    return out;
  }();
  return all;
}

std::string family_names() {
  std::string names;
  for (const Family* f : families()) names += (names.empty() ? "" : ", ") + f->name();
  return model_families().empty() ? names + " (no other is linked in: link condbench_families)" : names;
}

std::string per_token_family_names() {
  std::string names;
  for (const Family* f : families())
    if (f->unit() == TimedUnit::token) names += (names.empty() ? "" : ",") + f->name();
  return names;
}

const Family& family(std::string_view name) {
  for (const Family* f : families())
    if (f->name() == name) return *f;
  fail("unknown model family '" + std::string(name) + "' (" + family_names() + ")");
}

const ModelFamily& model_family(std::string_view name) {
  const ModelFamily* found = family(name).per_inference();
  if (found == nullptr) fail("the " + std::string(name) + " is timed per token, not per inference");
  return *found;
}

ModelConfig model_config(std::string_view family) { return model_family(family).config(); }

}  // namespace condbench
