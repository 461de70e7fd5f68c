#include "game/committee.h"

#include <algorithm>
#include <bit>

#include "challenge/challenge.h"
#include "common/error.h"

namespace pot::game {

namespace {

// The candidates' stakes in a Fenwick (binary indexed) tree: drawing a
// member sets its stake to 0, and the member holding stake offset y is found
// by descending the tree, so a draw costs O(log n) instead of a scan.
class StakeTree {
 public:
  explicit StakeTree(const std::vector<Candidate> &c) : tree_(c.size() + 1, 0) {
    for (size_t i = 1; i <= c.size(); ++i) {
      tree_[i] += c[i - 1].stake;
      const size_t parent = i + (i & (~i + 1));
      if (parent < tree_.size()) tree_[parent] += tree_[i];
    }
  }
  // Removes `stake` at 0-based index i.
  void remove(size_t i, uint64_t stake) {
    for (size_t k = i + 1; k < tree_.size(); k += k & (~k + 1)) tree_[k] -= stake;
  }
  // The smallest 0-based index whose cumulative stake (itself included)
  // exceeds y; y must be below the total.
  size_t find(uint64_t y) const {
    size_t pos = 0;
    for (size_t step = std::bit_floor(tree_.size() - 1); step != 0; step >>= 1) {
      if (pos + step < tree_.size() && tree_[pos + step] <= y) {
        pos += step;
        y -= tree_[pos];
      }
    }
    return pos;  // 1-based pos + 1 is the answer; as 0-based, pos
  }

 private:
  std::vector<uint64_t> tree_;
};

uint64_t checked_total(ByteView randomness, const std::vector<Candidate> &candidates) {
  if (randomness.empty() || randomness.size() > challenge::kMaxBeaconBytes)
    fail(Status::kInvalidArgument, "committee draw: randomness of {} bytes, expected 1..{}", randomness.size(),
         challenge::kMaxBeaconBytes);
  uint64_t total = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].stake == 0) fail(Status::kInvalidArgument, "committee draw: a candidate without stake");
    if (i > 0 && !std::ranges::lexicographical_compare(candidates[i - 1].identity, candidates[i].identity))
      fail(Status::kInvalidArgument, "committee draw: candidates not sorted by identity, or listed twice");
    if (candidates[i].stake > UINT64_MAX - total)
      fail(Status::kInvalidArgument, "committee draw: the candidates' stakes sum past 2^64 - 1");
    total += candidates[i].stake;
  }
  return total;
}

std::vector<Candidate> draw(ByteView randomness, const hash::Digest &run_id, uint32_t round,
                            const std::vector<Candidate> &candidates, uint64_t total, uint32_t size) {
  StakeTree tree(candidates);
  std::vector<Candidate> out;
  const size_t members = std::min<size_t>(size, candidates.size());
  out.reserve(members);
  hash::Sha256 h;
  for (uint32_t j = 0; j < members; ++j) {
    // Uniform over the remaining stake.
    uint64_t counter = 0;
    const uint64_t y = challenge::uniform_below(total, counter, [&](uint64_t k) {
      hash::begin_tagged(h, "pot/v2/committee");
      h.update_u32le(static_cast<uint32_t>(randomness.size())).update(randomness).update(run_id.view());
      return h.update_u32le(round).update_u32le(j).update_u64le(k).finish();
    });
    // The remaining member whose stake interval, in identity order, holds y
    // (drawn members hold no stake any more, so they are never found).
    const size_t i = tree.find(y);
    tree.remove(i, candidates[i].stake);
    total -= candidates[i].stake;
    out.push_back(candidates[i]);
  }
  return out;
}

}  // namespace

std::vector<Candidate> draw_committee(ByteView randomness, const hash::Digest &run_id, uint32_t round,
                                      const std::vector<Candidate> &candidates, uint32_t size) {
  const uint64_t total = checked_total(randomness, candidates);
  return draw(randomness, run_id, round, candidates, total, size);
}

std::vector<std::vector<Candidate>> draw_committees(ByteView randomness, const hash::Digest &run_id,
                                                    uint32_t rounds, const std::vector<Candidate> &candidates,
                                                    uint32_t size) {
  const uint64_t total = checked_total(randomness, candidates);
  std::vector<std::vector<Candidate>> out;
  out.reserve(rounds);
  for (uint32_t r = 0; r < rounds; ++r) out.push_back(draw(randomness, run_id, r, candidates, total, size));
  return out;
}

}  // namespace pot::game
