// A step bisection with deadlines (docs/PROTOCOL.md section 22.1,
// "Deadlines"): each round both parties claim the digests of its points by
// the round's deadline, in either order; the round is played when both
// have claimed, and the next round's deadline is counted from that height.
// A party that has not claimed when the deadline passes loses by default:
// a dispute cannot be stalled. Heights are the caller's (a ledger's block
// heights); no clock is read.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/heights.h"
#include "dispute/bisection.h"

namespace pot::dispute {

enum class Party { kA = 1, kB = 2 };

// "A" or "B".
const char *party_name(Party p) noexcept;

class TimedBisection {
 public:
  // The bisection starts at height `now`; each round lasts `round_window`
  // blocks (>= 1; kInvalidArgument otherwise, or kOutOfRange when a
  // deadline would not fit 64 bits). Party A may claim up to `grace_a`
  // blocks past each deadline (a miner's grace, docs/ledger.md 2.14; the
  // sum saturates at 2^64 - 1). Other arguments as StepBisection's.
  TimedBisection(uint64_t lo, uint64_t hi, uint32_t arity, const hash::Digest &agreed, const hash::Digest &a_hi,
                 const hash::Digest &b_hi, uint64_t round_window, uint64_t now, uint64_t grace_a = 0);

  const StepBisection &bisection() const { return bisection_; }
  // The current round's deadline: the last height at which it takes B's
  // claims, and A's but for its grace.
  uint64_t deadline() const { return deadline_; }
  // The last height at which the current round takes party p's claims.
  uint64_t deadline(Party p) const {
    return p == Party::kB ? deadline_ : saturating_add(deadline_, grace_a_);
  }
  // Whether `p` has claimed in the current round.
  bool claimed(Party p) const { return (p == Party::kA ? a_ : b_).has_value(); }
  // Party `p`'s claims in the current round, while the other has not claimed.
  const std::optional<std::vector<hash::Digest>> &pending(Party p) const { return p == Party::kA ? a_ : b_; }
  // The height of the latest accepted claim (or the start).
  uint64_t height() const { return height_; }
  // The height the current round started at (its deadline less the window).
  uint64_t round_start() const { return deadline_ - round_window_; }

  // Party `p`'s claims for the current round's points, at height `now`.
  // When the other party has claimed already, the round is played and the
  // next deadline is now + round_window. Refusals (nothing changes):
  // kInvalidArgument for `now` below the start or the last claim, or a
  // list that is not one digest per point; kState once the bisection is
  // done, or past the deadline (the round is lost: default_losers); kDuplicate
  // for a second claim of `p` in the round.
  void claim(Party p, const std::vector<hash::Digest> &claims, uint64_t now);

  // The parties that lose by default at height `now`: those that have not
  // claimed in the current round once their deadline has passed (both,
  // when neither did by then). Empty while no deadline has passed, and once
  // the bisection is done.
  std::vector<Party> default_losers(uint64_t now) const;

 private:
  StepBisection bisection_;
  uint64_t round_window_;
  uint64_t grace_a_;
  uint64_t height_;    // the latest accepted height
  uint64_t deadline_;  // of the current round
  std::optional<std::vector<hash::Digest>> a_, b_;
};

}  // namespace pot::dispute
