// Challenge derivation (docs/PROTOCOL.md section 11): the steps to check are
// drawn from a beacon value the miner could not know and the run id, uniformly
// over 1..n without modulo bias, k distinct steps for k rounds.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "hash/sha256.h"

namespace pot::challenge {

inline constexpr size_t kMaxBeaconBytes = 1024;
inline constexpr uint64_t kMaxRounds = 65536;

// A value uniform over 0..n-1 (n >= 1) without modulo bias: x, the first 8
// bytes little-endian of digest_of(counter), for the first counter (from
// `counter` on) whose x is below 2^64 - (2^64 mod n), a multiple of n;
// returns x mod n and leaves `counter` just past the one used, so a caller
// that rejects the value draws again where the sequence stopped. Sections
// 11 and 11.1 draw their steps and committee seats this way.
template <typename DigestOf>
uint64_t uniform_below(uint64_t n, uint64_t &counter, DigestOf &&digest_of) {
  const uint64_t excess = (UINT64_MAX % n + 1) % n;  // 2^64 mod n
  for (;;) {
    const hash::Digest d = digest_of(counter++);
    const uint64_t x = get_u64le(d.bytes.data());
    if (excess != 0 && x > UINT64_MAX - excess) continue;  // rejection keeps the draw unbiased
    return x % n;
  }
}

// Step of round `round` (0-based), skipping the steps of earlier rounds.
// kInvalidArgument when num_steps == 0, rounds > num_steps or the beacon is
// empty; kLimit past kMaxBeaconBytes or kMaxRounds.
std::vector<uint64_t> derive_challenges(ByteView beacon, const hash::Digest &run_id, uint64_t num_steps,
                                        uint64_t rounds);

}  // namespace pot::challenge
