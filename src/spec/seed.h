// The per_step seed policy (docs/PROTOCOL.md section 9): the seed of step t
// of run R is derived from the committed base seed, R and t by a hash, so
// the trainer and every verifier seed the RNG identically before the forward
// pass, and two runs of one task draw different random numbers (a run's
// trajectory cannot be registered again under another commitment).
#pragma once

#include <cstdint>

#include "hash/sha256.h"

namespace pot::spec {

// u64 from the first 8 bytes (little-endian) of
// tagged("pot/v2/seed", u64le(base_seed) || run_id || u64le(step)).
uint64_t derive_seed(uint64_t base_seed, const hash::Digest &run_id, uint64_t step);

// The run id whose seeds a verifier replays a step under a second time, to
// see that the step's declared randomness changes it (docs/PROTOCOL.md
// 21.5, check 30): tagged("pot/v2/seed-probe", run_id). No run has it: a run
// id hashes a commitment under another tag.
hash::Digest probe_run_id(const hash::Digest &run_id);

}  // namespace pot::spec
