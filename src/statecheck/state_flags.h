// The rules over two consecutive states' statistics (docs/PROTOCOL.md 5.3):
// what honest training does not do in one step. A flag is a reason to
// replay the step, never a verdict: the rules are measured to flag no
// honest step of the determinism matrix (bench/state_flags.py), and a step
// that trips one is challenged for certain, so the step that poisons a
// state (round 3, attack 1) is replayed whichever steps the beacon draws.
// The thresholds are protocol constants, the same for every verifier.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statecheck/state_stats.h"

namespace pot::statecheck {

// A tensor's max |x| or L2 norm growing, or its norm shrinking, by more than
// this factor in one step (against max(previous, 1) when growing).
inline constexpr double kJumpFactor = 1024.0;       // 2^10
// An optimizer-state value this large saturates the moments.
inline constexpr double kSaturatedMagnitude = 1099511627776.0;  // 2^40

// The values are stable: the C API and the bindings name them.
enum class StateRule : int {
  kMaxAbsJump = 0,    // max_abs > 2^10 * max(previous max_abs, 1)
  kNormJump = 1,      // l2_norm > 2^10 * max(previous l2_norm, 1)
  kNormCollapse = 2,  // previous l2_norm > 1 and l2_norm < previous / 2^10
  kSaturated = 3,     // an "optim/" tensor reaches max_abs >= 2^40 (it was below, or absent)
  kNonfinite = 4,     // a tensor holds a NaN or infinity (it held none, or was absent)
  kChanged = 5,       // a tensor of both states changes dtype or element count
};
inline constexpr int kLastStateRule = 5;

// "max_abs_jump", "norm_jump", "norm_collapse", "saturated", "nonfinite",
// "changed"; "unknown" otherwise.
const char *state_rule_name(StateRule rule) noexcept;

struct StateFlag {
  StateRule rule;
  std::string tensor;
  double before = 0;  // the compared statistic in the earlier state (0 when absent)
  double after = 0;   // and in the later one

  bool operator==(const StateFlag &) const = default;
};

// The flags of the step from the state of `before` to that of `after`, by
// tensor in name order, then by rule. A tensor of only one of the two tables
// is compared with nothing (the optimizer's moments appear at step 1);
// kSaturated and kNonfinite hold for it on their own.
std::vector<StateFlag> state_flags(const StateStats &before, const StateStats &after);

// [{"rule": name, "tensor": name, "before": x, "after": x}, ...]
std::string flags_to_json(const std::vector<StateFlag> &flags);

// A step of a run with its flags (none for a step the rules pass).
struct FlaggedStep {
  uint64_t step = 0;
  std::vector<StateFlag> flags;
};

// The flagged steps of a run, ascending (docs/PROTOCOL.md 5.3): tables[i]
// is the table of S_{i+1}; step t > 1 is state_flags(tables[t-2],
// tables[t-1]), step 1 state_flags of an empty table and S_1's (no leaf binds
// S_0's table, so only the rules that need no earlier value flag step 1).
std::vector<FlaggedStep> run_flags(const std::vector<StateStats> &tables);

// [{"step": t, "flags": [flags_to_json's objects]}, ...]
std::string run_flags_to_json(const std::vector<FlaggedStep> &steps);

// Decodes the tables of S_1, S_2, ... strictly; an error names the state.
std::vector<StateStats> decode_tables(const std::vector<Bytes> &tables);

// The index of the first element of a list of flagged steps that breaks
// "ascending within 1..n" (a run of n steps), or nullopt when none does.
std::optional<size_t> misplaced_step(const std::vector<uint64_t> &steps, uint64_t n) noexcept;

}  // namespace pot::statecheck
