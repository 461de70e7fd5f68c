// Security arithmetic (docs/PROTOCOL.md section 12): the probability that k
// distinct challenges over n steps hit at least one of m forged steps, and
// the number of challenges a target probability needs.
#pragma once

#include <cstdint>

namespace pot::challenge {

// 1 - C(n - m, k) / C(n, k): challenges are distinct steps drawn uniformly
// (section 11), so this is exact, and at least 1 - (1 - m/n)^k.
// kInvalidArgument unless m <= n, k <= n, n > 0; kLimit past kMaxRounds.
double detection_probability(uint64_t steps, uint64_t forged, uint64_t challenges);

// Smallest k with detection_probability(n, m, k) >= target; kInvalidArgument
// unless 0 < target < 1 and m > 0 (no number of challenges finds nothing);
// kLimit when more than kMaxRounds would be needed.
uint64_t challenges_needed(uint64_t steps, uint64_t forged, double target);

// Forging pays only when its gain exceeds stake * P(detect): the largest gain
// a rational miner forgoes, stake * detection_probability.
double deterrence(double stake, uint64_t steps, uint64_t forged, uint64_t challenges);

}  // namespace pot::challenge
