#include "statecheck/state_flags.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.h"
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

namespace {

nlohmann::ordered_json flags_json(const std::vector<StateFlag> &flags) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  auto number = [](double x) { return std::isinf(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x); };
  for (const StateFlag &f : flags)
    list.push_back({{"rule", state_rule_name(f.rule)}, {"tensor", f.tensor}, {"before", number(f.before)},
                    {"after", number(f.after)}});
  return list;
}

}  // namespace

std::string flags_to_json(const std::vector<StateFlag> &flags) { return flags_json(flags).dump(); }

std::string run_flags_to_json(const std::vector<FlaggedStep> &steps) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const FlaggedStep &s : steps) list.push_back({{"step", s.step}, {"flags", flags_json(s.flags)}});
  return list.dump();
}

std::vector<StateStats> decode_tables(const std::vector<Bytes> &tables) {
  std::vector<StateStats> out;
  out.reserve(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    try {
      out.push_back(StateStats::decode(tables[i]));
    } catch (const Error &e) {
      fail(e.status(), "the statistics table of S_{}: {}", i + 1, e.what());
    }
  }
  return out;
}

std::vector<FlaggedStep> run_flags(const std::vector<StateStats> &tables) {
  std::vector<FlaggedStep> out;
  const StateStats empty;
  for (size_t i = 0; i < tables.size(); ++i) {
    std::vector<StateFlag> flags = state_flags(i == 0 ? empty : tables[i - 1], tables[i]);
    if (!flags.empty()) out.push_back({i + 1, std::move(flags)});
  }
  return out;
}

std::optional<size_t> misplaced_step(const std::vector<uint64_t> &steps, uint64_t n) noexcept {
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] == 0 || steps[i] > n || (i > 0 && steps[i] <= steps[i - 1])) return i;
  return std::nullopt;
}

}  // namespace pot::statecheck
