#include "challenge/security.h"

#include <algorithm>
#include <cmath>

#include "challenge/challenge.h"
#include "common/error.h"

namespace pot::challenge {

namespace {
void check(uint64_t steps, uint64_t forged) {
  if (steps == 0) fail(Status::kInvalidArgument, "the run has 0 steps");
  if (forged > steps) fail(Status::kInvalidArgument, "{} forged steps out of {}", forged, steps);
}
}  // namespace

double detection_probability(uint64_t steps, uint64_t forged, uint64_t challenges) {
  check(steps, forged);
  if (challenges > steps)
    fail(Status::kInvalidArgument, "{} distinct challenges asked of {} steps", challenges, steps);
  if (challenges > kMaxRounds)
    fail(Status::kLimit, "{} challenges, more than the {} a challenge derivation issues", challenges, kMaxRounds);
  // P(miss) = prod_{i<k} (n - m - i) / (n - i), accumulated in log space so
  // large k does not underflow before the end.
  double log_miss = 0;
  for (uint64_t i = 0; i < challenges; ++i) {
    if (steps - i <= forged) return 1.0;  // fewer honest steps left than draws: certain
    log_miss += std::log(static_cast<double>(steps - forged - i)) - std::log(static_cast<double>(steps - i));
  }
  return -std::expm1(log_miss);
}

uint64_t challenges_needed(uint64_t steps, uint64_t forged, double target) {
  check(steps, forged);
  if (!(target > 0 && target < 1)) fail(Status::kInvalidArgument, "target probability {} is not in (0, 1)", target);
  if (forged == 0) fail(Status::kInvalidArgument, "with no forged step no number of challenges detects anything");
  double log_miss = 0;
  const double log_goal = std::log1p(-target);
  const uint64_t most = std::min<uint64_t>(steps, kMaxRounds);
  for (uint64_t k = 1; k <= most; ++k) {
    const uint64_t i = k - 1;
    if (steps - i <= forged) return k;
    log_miss += std::log(static_cast<double>(steps - forged - i)) - std::log(static_cast<double>(steps - i));
    if (log_miss <= log_goal) return k;
  }
  fail(Status::kLimit, "more than {} challenges are needed for {} forged of {} steps at {}", most, forged, steps,
       target);
}

double deterrence(double stake, uint64_t steps, uint64_t forged, uint64_t challenges) {
  if (!(stake >= 0) || !std::isfinite(stake)) fail(Status::kInvalidArgument, "stake {} is not a finite non-negative number", stake);
  return stake * detection_probability(steps, forged, challenges);
}

}  // namespace pot::challenge
