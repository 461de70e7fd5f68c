// Auxiliary loss-curve checks (docs/losscheck.md): cheap rules over the
// committed per-step loss sequence that flag obviously broken or fabricated
// runs (a loss that never falls, falls implausibly fast, stays frozen, spikes,
// or is not a number) before anyone spends compute on replay. A flag is a
// reason to look, not a verdict: honest runs can trip a rule, and passing the
// rules proves nothing. The rules are deterministic (no randomness, fixed
// evaluation order), so every verifier gets the same flags from the same log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pot::losscheck {

// Upper bound of LossCheckParams::window: the window rules cost O(n * window).
inline constexpr uint64_t kMaxLossWindow = 10000;

// Thresholds of the rules; the defaults suit minibatch training of a neural
// network (losses of order 0.01..10 that fall fastest in the first steps).
// docs/losscheck.md gives the reasoning behind each default.
struct LossCheckParams {
  // Steps per window (1..kMaxLossWindow). Levels are window medians, so a
  // single noisy step never decides a rule on its own.
  uint64_t window = 20;
  // kNoDecrease: the median of the last window must lie below the median of
  // the first window by more than decrease_tolerance * |first median|, in
  // [0, 1), and by more than decrease_sigmas (finite, >= 0) standard errors
  // of the difference of the two medians, the noise being estimated from the
  // step-to-step differences inside each window; so noise alone does not pass
  // for a decrease.
  double decrease_tolerance = 0.02;
  double decrease_sigmas = 3.0;
  // kImplausibleRate: a step whose loss, and the median of the window that
  // starts at it (at least half a window near the end), are both more than
  // max_drop * |median| below the median of the window before it. (0, 1].
  double max_drop = 0.9;
  // kFrozen: at least frozen_min_steps consecutive steps (>= 2), each within
  // frozen_epsilon (finite, >= 0) of the step before it; 0 = equal values.
  uint64_t frozen_min_steps = 10;
  double frozen_epsilon = 0.0;
  // kRegression: a step whose loss exceeds the median of the window before it
  // by more than regression_sigmas robust standard deviations (1.4826 * MAD
  // of that window) AND by more than regression_min_increase * |median|.
  // Both finite and >= 0.
  double regression_sigmas = 6.0;
  double regression_min_increase = 1.0;
  // At most this many flags are returned (>= 1), which bounds the output of a
  // hostile sequence; see check_loss_curve.
  uint64_t max_flags = 1000;
};

// Throws pot::Error(kInvalidArgument) naming the first parameter out of its
// range (the ranges are in the comments above).
void validate(const LossCheckParams &params);

// The values are stable: the C API mirrors them, and flags sort by them.
enum class LossFlagKind : int {
  kNoDecrease = 0,
  kImplausibleRate = 1,
  kFrozen = 2,
  kRegression = 3,
  kNonFinite = 4,
};

// Stable lower-case name: "no_decrease", "implausible_rate", "frozen",
// "regression", "non_finite"; "unknown" for a value outside the enum.
const char *loss_flag_name(LossFlagKind kind) noexcept;

// [first_step, last_step] are exactly the steps the rule fired on; the
// message may also name the windows it compared them with.
struct LossFlag {
  LossFlagKind kind = LossFlagKind::kNoDecrease;
  uint64_t first_step = 0;  // 1-based, inclusive
  uint64_t last_step = 0;   // inclusive, >= first_step
  std::string message;      // what was seen, with the numbers
};

// Runs every rule on losses, where losses[i] is the committed loss of step
// i + 1, and returns the flags sorted by (first_step, kind). Validates params
// first. An empty sequence gives no flags; a rule whose window does not fit
// in the sequence gives none either. NaN and infinite losses are always
// flagged (kNonFinite); they split the sequence into stretches for the
// frozen, rate and regression rules, and no_decrease compares the first and
// last windows of finite losses.
// At most params.max_flags flags are returned, the first ones in that order;
// when more were found, the last returned message ends with
// "(flag limit reached: N more flags not listed)". Time O(n * window) with
// n = losses.size(); memory O(window + max_flags) beyond the result.
std::vector<LossFlag> check_loss_curve(const std::vector<double> &losses,
                                       const LossCheckParams &params);

}  // namespace pot::losscheck
