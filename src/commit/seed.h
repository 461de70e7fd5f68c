// The per_step seed policy (docs/PROTOCOL.md section 9): the seed of step t
// is derived from the committed base seed and t by a hash, so the trainer
// and every verifier seed the RNG identically before the forward pass.
#pragma once

#include <cstdint>

namespace pot::commit {

// u64 from the first 8 bytes (little-endian) of
// tagged("pot/v1/seed", u64le(base_seed) || u64le(step)).
uint64_t derive_seed(uint64_t base_seed, uint64_t step);

}  // namespace pot::commit
