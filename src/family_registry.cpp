// The model family registry (include/condbench/family.h): each family registers itself from its
// own file in src/families/, with CONDBENCH_REGISTER_FAMILY.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

std::string family_names() {
  std::string names;
  for (const ModelFamily* family : model_families()) names += (names.empty() ? "" : ", ") + family->name();
  return names.empty() ? "none is linked in: link condbench_families" : names;
}

const ModelFamily& model_family(std::string_view name) {
  const auto& all = model_families();
  const auto it = std::find_if(all.begin(), all.end(), [&](const ModelFamily* f) { return f->name() == name; });
  if (it == all.end()) fail("unknown model family '" + std::string(name) + "' (" + family_names() + ")");
  return **it;
}

ModelConfig model_config(std::string_view family) { return model_family(family).config(); }

}  // namespace condbench
