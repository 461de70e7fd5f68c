// The bond that makes forging worthless in expectation (docs/PROTOCOL.md
// section 12.2). A miner that forges computes nothing it is paid for: when
// undetected it gains at most the whole reward R, when detected (probability
// p per run) it loses its bond B and the reward. Forging pays nothing in
// expectation when (1 - p) R - p B <= 0, that is B >= R (1 - p) / p; an
// honest miner's expectation, R less its cost, is never below that of a
// forger who saves the whole cost, so no forging strategy beats training.
#pragma once

#include <cstdint>

namespace pot::bond {

// The least integer B with p * B >= (1 - p) * R, computed exactly for the
// double p given. kInvalidArgument unless 0 < p <= 1 (with p = 0 no bond
// deters); kOutOfRange when B would pass 2^64 - 1.
uint64_t deterrent_bond(uint64_t reward, double detection_probability);

}  // namespace pot::bond
