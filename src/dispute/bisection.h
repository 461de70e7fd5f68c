// Step bisection (docs/PROTOCOL.md section 22.1), the first phase of a
// refereed dispute: two parties that agree on the state digest of step lo
// and claim different digests of step hi narrow (lo, hi] round by round to
// one step i, with S_{i-1} agreed and S_i disputed. Each round both parties
// claim the state digests at the round's points (k - 1 steps spread evenly
// over the interval, k the arity); the first point where the claims differ
// ends the new interval, the point before it begins it. The referee then
// decides step i alone (one step, then one operator: the later phases).
//
// Why it is sound with one honest party: the honest party only claims true
// digests, so every agreed digest is a true one, and at step i the honest
// claim is the true successor of an agreed, true S_{i-1}: whatever the other
// party claimed on the way, it loses the one-step decision. Nothing needs
// to be committed before the other side answers: copying the honest
// party's claims only moves the interval to where the copier diverges.
//
// Deterministic, no allocation beyond the round's points, no LibTorch.
#pragma once

#include <cstdint>
#include <vector>

#include "hash/sha256.h"

namespace pot::dispute {

// Arity bounds: k - 1 digests per party per round, at most 255 (8160 bytes).
inline constexpr uint32_t kMinArity = 2;
inline constexpr uint32_t kMaxArity = 256;

// The steps claimed in a round over (lo, hi] with arity k: for L = hi - lo,
// lo + floor(j * L / k) for j = 1..k-1 when L >= k, else every step of
// lo+1..hi-1; increasing, distinct, strictly inside the interval (empty when
// L == 1). kInvalidArgument for lo >= hi or an arity outside 2..256.
std::vector<uint64_t> bisection_points(uint64_t lo, uint64_t hi, uint32_t arity);

// The most rounds a bisection of (lo, hi] can take: 0 when hi == lo + 1,
// else 1 + the rounds of the longest interval a round can leave
// (ceil(L / k) steps when L >= k, 1 otherwise). For L <= k^r it is at most
// r, so ceil(log_k(L)). Same argument checks as bisection_points.
uint32_t bisection_rounds(uint64_t lo, uint64_t hi, uint32_t arity);

class StepBisection {
 public:
  // The parties agree that S_lo has digest `agreed`; party A claims
  // `a_hi` for S_hi, party B `b_hi`. kInvalidArgument for lo >= hi, an
  // arity outside 2..256, or a_hi == b_hi (nothing is disputed).
  StepBisection(uint64_t lo, uint64_t hi, uint32_t arity, const hash::Digest &agreed, const hash::Digest &a_hi,
                const hash::Digest &b_hi);

  // The current interval (lo, hi] and what is known at its ends.
  uint64_t lo() const { return lo_; }
  uint64_t hi() const { return hi_; }
  uint32_t arity() const { return arity_; }
  const hash::Digest &agreed() const { return agreed_; }  // the digest both claim for S_lo
  const hash::Digest &a_hi() const { return a_hi_; }      // A's claim for S_hi
  const hash::Digest &b_hi() const { return b_hi_; }      // B's claim for S_hi
  uint32_t rounds_played() const { return rounds_; }

  // Whether the dispute is down to one step: hi == lo + 1, the step is hi.
  bool done() const { return hi_ == lo_ + 1; }
  // The steps both parties claim this round (bisection_points of the
  // interval); kState once done.
  std::vector<uint64_t> points() const;
  // Plays the round: A's and B's claims for points(), in order. The
  // interval becomes (p_{j-1}, p_j] for the first point p_j where they
  // differ (p_0 = lo), or (p_last, hi] when they agree on every point.
  // kState once done; kInvalidArgument (the state unchanged) when a list
  // is not one digest per point.
  void play_round(const std::vector<hash::Digest> &a, const std::vector<hash::Digest> &b);

 private:
  uint64_t lo_, hi_;
  uint32_t arity_;
  hash::Digest agreed_, a_hi_, b_hi_;
  uint32_t rounds_ = 0;
};

}  // namespace pot::dispute
