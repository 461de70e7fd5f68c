#include "game/committee.h"

#include <algorithm>

#include "commit/challenge.h"
#include "common/error.h"

namespace pot::game {

std::vector<Candidate> draw_committee(ByteView randomness, const hash::Digest &run_id, uint32_t round,
                                      const std::vector<Candidate> &candidates, uint32_t size) {
  if (randomness.empty() || randomness.size() > commit::kMaxBeaconBytes)
    fail(Status::kInvalidArgument, "committee draw: randomness of {} bytes, expected 1..{}", randomness.size(),
         commit::kMaxBeaconBytes);
  uint64_t total = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].stake == 0) fail(Status::kInvalidArgument, "committee draw: a candidate without stake");
    if (i > 0 && !std::ranges::lexicographical_compare(candidates[i - 1].identity, candidates[i].identity))
      fail(Status::kInvalidArgument, "committee draw: candidates not sorted by identity, or listed twice");
    if (candidates[i].stake > UINT64_MAX - total)
      fail(Status::kInvalidArgument, "committee draw: the candidates' stakes sum past 2^64 - 1");
    total += candidates[i].stake;
  }
  std::vector<Candidate> pool = candidates;
  std::vector<Candidate> out;
  const size_t members = std::min<size_t>(size, pool.size());
  out.reserve(members);
  hash::Sha256 h;
  for (uint32_t j = 0; j < members; ++j) {
    // Accept x only below 2^64 - (2^64 mod total), a multiple of total: then
    // x mod total is exactly uniform over the pool's stake.
    const uint64_t excess = (UINT64_MAX % total + 1) % total;  // 2^64 mod total
    uint64_t y = 0;
    for (uint64_t counter = 0;; ++counter) {
      hash::begin_tagged(h, "pot/v2/committee");
      h.update_u32le(static_cast<uint32_t>(randomness.size())).update(randomness).update(run_id.view());
      const hash::Digest d = h.update_u32le(round).update_u32le(j).update_u64le(counter).finish();
      const uint64_t x = get_u64le(d.bytes.data());
      if (excess != 0 && x > UINT64_MAX - excess) continue;
      y = x % total;
      break;
    }
    // The member whose stake interval [before, before + stake) holds y, in
    // the pool's (identity) order.
    size_t i = 0;
    for (uint64_t before = 0; y >= before + pool[i].stake; ++i) before += pool[i].stake;
    total -= pool[i].stake;
    out.push_back(std::move(pool[i]));
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

}  // namespace pot::game
