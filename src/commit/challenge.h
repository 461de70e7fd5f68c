// Challenge derivation (docs/PROTOCOL.md section 11): the steps to check are
// drawn from a beacon value the miner could not know and the run id, uniformly
// over 1..n without modulo bias, k distinct steps for k rounds.
#pragma once

#include <cstdint>
#include <vector>

#include "hash/sha256.h"

namespace pot::commit {

inline constexpr size_t kMaxBeaconBytes = 1024;
inline constexpr uint64_t kMaxRounds = 65536;

// Step of round `round` (0-based), skipping the steps of earlier rounds.
// kInvalidArgument when num_steps == 0, rounds > num_steps or the beacon is
// empty; kLimit past kMaxBeaconBytes or kMaxRounds.
std::vector<uint64_t> derive_challenges(ByteView beacon, const hash::Digest &run_id, uint64_t num_steps,
                                        uint64_t rounds);

}  // namespace pot::commit
