#include "dispute/timed.h"

#include "common/error.h"

namespace pot::dispute {

const char *party_name(Party p) noexcept { return p == Party::kA ? "A" : "B"; }

namespace {

uint64_t deadline_after(uint64_t now, uint64_t window) {
  if (window > UINT64_MAX - now)
    fail(Status::kOutOfRange, "step bisection: a round from height {} of {} blocks ends past 2^64 - 1", now, window);
  return now + window;
}

}  // namespace

TimedBisection::TimedBisection(uint64_t lo, uint64_t hi, uint32_t arity, const hash::Digest &agreed,
                               const hash::Digest &a_hi, const hash::Digest &b_hi, uint64_t round_window,
                               uint64_t now, uint64_t grace_a)
    : bisection_(lo, hi, arity, agreed, a_hi, b_hi), round_window_(round_window), grace_a_(grace_a), height_(now) {
  if (round_window == 0) fail(Status::kInvalidArgument, "step bisection: round_window must be at least 1 block");
  deadline_ = deadline_after(now, round_window);
}

void TimedBisection::claim(Party p, const std::vector<hash::Digest> &claims, uint64_t now) {
  if (now < height_)
    fail(Status::kInvalidArgument, "step bisection: height {} is below the latest claim's {}; time does not go back",
         now, height_);
  if (bisection_.done()) fail(Status::kState, "step bisection: done at step {}", bisection_.hi());
  if (now > deadline(p))
    fail(Status::kState, "step bisection: the round over ({}, {}] closed at height {} for party {}", bisection_.lo(),
         bisection_.hi(), deadline(p), party_name(p));
  std::optional<std::vector<hash::Digest>> &mine = p == Party::kA ? a_ : b_;
  if (mine) fail(Status::kDuplicate, "step bisection: party {} has claimed in this round", party_name(p));
  const size_t points = bisection_.points().size();
  if (claims.size() != points)
    fail(Status::kInvalidArgument, "step bisection: party {} claims {} digests, the round over ({}, {}] has {} points",
         party_name(p), claims.size(), bisection_.lo(), bisection_.hi(), points);
  const std::optional<std::vector<hash::Digest>> &theirs = p == Party::kA ? b_ : a_;
  if (!theirs) {
    mine = claims;
    height_ = now;
    return;
  }
  const uint64_t next = deadline_after(now, round_window_);  // checked before anything changes
  bisection_.play_round(p == Party::kA ? claims : *a_, p == Party::kA ? *b_ : claims);
  a_.reset();
  b_.reset();
  deadline_ = next;
  height_ = now;
}

std::vector<Party> TimedBisection::default_losers(uint64_t now) const {
  std::vector<Party> out;
  if (bisection_.done()) return out;
  if (!a_ && now > deadline(Party::kA)) out.push_back(Party::kA);
  if (!b_ && now > deadline(Party::kB)) out.push_back(Party::kB);
  return out;
}

}  // namespace pot::dispute
