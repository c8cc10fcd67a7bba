#include "condbench/rules.h"

#include "condbench/agreement.h"
#include "condbench/error.h"
#include "condbench/exit_math.h"
#include "condbench/model_file.h"

namespace condbench {
namespace {

// math::exit_fires as data: which comparison of a score with its threshold fires, read off the
// rule itself at a score below, at and above a threshold.
std::string exit_comparison() {
  constexpr float kThreshold = 0.5f;
  const bool below = math::exit_fires(0.25f, kThreshold), at = math::exit_fires(kThreshold, kThreshold),
             above = math::exit_fires(0.75f, kThreshold);
  if (below || !above) fail("math::exit_fires is not a comparison of a score against its threshold");
  return at ? ">=" : ">";
}

}  // namespace

nlohmann::json rules_as_data() {
  nlohmann::json rules;
  rules["exit_rule"] = {{"score", "max_softmax"},  // TorchLayers::confidence unless a model file gives its own
                        {"fires_when", "score " + exit_comparison() + " threshold"}};
  rules["agreement"] = {{"relative_tolerance", kAgreementRelativeTolerance}, {"tie_margin", kTieMargin}};
  rules["model_file_agreement"] = {{"absolute_tolerance", kModelFileAgreement.absolute_tolerance},
                                   {"relative_tolerance", kModelFileAgreement.relative_tolerance},
                                   {"tie_margin", kModelFileAgreement.tie_margin}};
  rules["model_file_part_check"] = {{"absolute_tolerance", kModelFilePartCheck.absolute_tolerance},
                                    {"relative_tolerance", kModelFilePartCheck.relative_tolerance},
                                    {"tie_margin", kModelFilePartCheck.tie_margin}};
  return rules;
}

}  // namespace condbench
