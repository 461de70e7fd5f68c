// Committees (docs/PROTOCOL.md section 11.1): the registered verifiers that
// judge one challenge, drawn by stake from the chain's randomness that drew
// the challenged steps. Nobody chooses them: not the miner, not the
// verifiers, not whoever triggers the draw.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "hash/sha256.h"
#include "task/task.h"

namespace pot::game {

// The largest committee a task may ask for (task::kMaxCommitteeSize).
inline constexpr uint32_t kMaxCommitteeSize = task::kMaxCommitteeSize;

struct Candidate {
  Bytes identity;
  uint64_t stake = 0;
  bool operator==(const Candidate &) const = default;
};

// Draws min(size, candidates.size()) distinct members, in draw order.
// Draw j picks a candidate with probability proportional to its stake among
// those not drawn yet. `candidates` must be sorted bytewise by identity,
// distinct, each stake >= 1 and their sum below 2^64 (kInvalidArgument
// otherwise); `randomness` 1..kMaxBeaconBytes bytes.
std::vector<Candidate> draw_committee(ByteView randomness, const hash::Digest &run_id, uint32_t round,
                                      const std::vector<Candidate> &candidates, uint32_t size);

// The committees of rounds 0..rounds-1 drawn from one candidate list (as
// draw_committee of each round), checking the list once: O(rounds * (n +
// size * log n)) for n candidates.
std::vector<std::vector<Candidate>> draw_committees(ByteView randomness, const hash::Digest &run_id,
                                                    uint32_t rounds, const std::vector<Candidate> &candidates,
                                                    uint32_t size);

}  // namespace pot::game
