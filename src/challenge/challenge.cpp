#include "challenge/challenge.h"

#include <algorithm>
#include <unordered_set>

#include "common/error.h"

namespace pot::challenge {

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
  std::vector<uint64_t> out;
  out.reserve(rounds);
  std::unordered_set<uint64_t> taken;
  hash::Sha256 h;
  for (uint32_t round = 0; round < rounds; ++round) {
    auto digest_of = [&](uint64_t counter) {
      hash::begin_tagged(h, "pot/v1/challenge");
      h.update_u32le(static_cast<uint32_t>(beacon.size())).update(beacon).update(run_id.view());
      return h.update_u32le(round).update_u64le(counter).finish();
    };
    uint64_t counter = 0;
    uint64_t step = 0;
    do {  // distinct steps across rounds: a step already drawn is drawn again
      step = 1 + uniform_below(num_steps, counter, digest_of);
    } while (!taken.insert(step).second);
    out.push_back(step);
  }
  return out;
}

}  // namespace pot::challenge
