#include "commit/challenge.h"

#include <algorithm>
#include <unordered_set>

#include "common/error.h"

namespace pot::commit {

std::vector<uint64_t> derive_challenges(ByteView beacon, const hash::Digest &run_id, uint64_t num_steps,
                                        uint64_t rounds) {
  if (num_steps == 0) fail(Status::kInvalidArgument, "a run of 0 steps cannot be challenged");
  if (rounds > num_steps)
    fail(Status::kInvalidArgument, "{} distinct challenges asked of a run of {} steps", rounds, num_steps);
  if (beacon.empty()) fail(Status::kInvalidArgument, "the beacon value is empty");
  if (beacon.size() > kMaxBeaconBytes)
    fail(Status::kLimit, "beacon of {} bytes, the limit is {}", beacon.size(), kMaxBeaconBytes);
  if (rounds > kMaxRounds)
    fail(Status::kLimit, "{} challenge rounds, the limit is {}", rounds, kMaxRounds);
  // Accept x only below 2^64 - (2^64 mod n), a multiple of n: then x mod n is
  // exactly uniform over 0..n-1.
  const uint64_t excess = (UINT64_MAX % num_steps + 1) % num_steps;  // 2^64 mod n
  std::vector<uint64_t> out;
  out.reserve(rounds);
  std::unordered_set<uint64_t> taken;
  hash::Sha256 h;
  for (uint32_t round = 0; round < rounds; ++round) {
    for (uint64_t counter = 0;; ++counter) {
      hash::begin_tagged(h, "pot/v1/challenge");
      h.update_u32le(static_cast<uint32_t>(beacon.size())).update(beacon).update(run_id.view());
      const hash::Digest d = h.update_u32le(round).update_u64le(counter).finish();
      const uint64_t x = get_u64le(d.bytes.data());
      if (excess != 0 && x > UINT64_MAX - excess) continue;  // rejection keeps the draw unbiased
      const uint64_t step = 1 + x % num_steps;
      if (!taken.insert(step).second) continue;  // distinct steps across rounds
      out.push_back(step);
      break;
    }
  }
  return out;
}

}  // namespace pot::commit
