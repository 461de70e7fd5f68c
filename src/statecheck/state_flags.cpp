#include "statecheck/state_flags.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "spec/state_names.h"

namespace pot::statecheck {

const char *state_rule_name(StateRule rule) noexcept {
  switch (rule) {
    case StateRule::kMaxAbsJump: return "max_abs_jump";
    case StateRule::kNormJump: return "norm_jump";
    case StateRule::kNormCollapse: return "norm_collapse";
    case StateRule::kSaturated: return "saturated";
    case StateRule::kNonfinite: return "nonfinite";
    case StateRule::kChanged: return "changed";
  }
  return "unknown";
}

namespace {

bool optimizer_state(const std::string &name) { return name.starts_with(spec::kOptimPrefix); }

void compare(const TensorStats *b, const TensorStats &a, std::vector<StateFlag> &out) {
  auto flag = [&](StateRule r, double before, double after) { out.push_back({r, a.name, before, after}); };
  if (b && (b->dtype != a.dtype || b->elements != a.elements)) {
    flag(StateRule::kChanged, static_cast<double>(b->elements), static_cast<double>(a.elements));
    return;  // another tensor under the same name: its magnitudes are not comparable
  }
  if (b && a.max_abs > kJumpFactor * std::max(b->max_abs, 1.0)) flag(StateRule::kMaxAbsJump, b->max_abs, a.max_abs);
  if (b && a.l2_norm > kJumpFactor * std::max(b->l2_norm, 1.0)) flag(StateRule::kNormJump, b->l2_norm, a.l2_norm);
  if (b && b->l2_norm > 1.0 && a.l2_norm < b->l2_norm / kJumpFactor)
    flag(StateRule::kNormCollapse, b->l2_norm, a.l2_norm);
  if (optimizer_state(a.name) && a.max_abs >= kSaturatedMagnitude && !(b && b->max_abs >= kSaturatedMagnitude))
    flag(StateRule::kSaturated, b ? b->max_abs : 0.0, a.max_abs);
  if (a.nonfinite > 0 && !(b && b->nonfinite > 0))
    flag(StateRule::kNonfinite, b ? static_cast<double>(b->nonfinite) : 0.0, static_cast<double>(a.nonfinite));
}

}  // namespace

std::vector<StateFlag> state_flags(const StateStats &before, const StateStats &after) {
  std::vector<StateFlag> out;
  for (const TensorStats &a : after.tensors) compare(before.find(a.name), a, out);
  return out;
}

std::string flags_to_json(const std::vector<StateFlag> &flags) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  auto number = [](double x) { return std::isinf(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x); };
  for (const StateFlag &f : flags)
    list.push_back({{"rule", state_rule_name(f.rule)}, {"tensor", f.tensor}, {"before", number(f.before)},
                    {"after", number(f.after)}});
  return list.dump();
}

}  // namespace pot::statecheck
