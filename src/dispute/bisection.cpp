#include "dispute/bisection.h"

#include "common/error.h"

namespace pot::dispute {

namespace {

void check_interval(uint64_t lo, uint64_t hi, uint32_t arity, const char *what) {
  if (lo >= hi) fail(Status::kInvalidArgument, "{}: the interval ({}, {}] holds no step", what, lo, hi);
  if (arity < kMinArity || arity > kMaxArity)
    fail(Status::kInvalidArgument, "{}: arity {} is outside {}..{}", what, arity, kMinArity, kMaxArity);
}

// floor(j * L / k) without overflow: j * (L / k) + j * (L % k) / k, where
// j * (L % k) < k^2 <= 2^16.
uint64_t split(uint64_t length, uint32_t j, uint32_t arity) {
  return j * (length / arity) + (uint64_t{j} * (length % arity)) / arity;
}

}  // namespace

std::vector<uint64_t> bisection_points(uint64_t lo, uint64_t hi, uint32_t arity) {
  check_interval(lo, hi, arity, "bisection_points");
  const uint64_t length = hi - lo;
  std::vector<uint64_t> points;
  if (length < arity) {
    points.reserve(length - 1);
    for (uint64_t p = lo + 1; p < hi; ++p) points.push_back(p);
  } else {
    points.reserve(arity - 1);
    for (uint32_t j = 1; j < arity; ++j) points.push_back(lo + split(length, j, arity));
  }
  return points;
}

uint32_t bisection_rounds(uint64_t lo, uint64_t hi, uint32_t arity) {
  check_interval(lo, hi, arity, "bisection_rounds");
  // A round over L >= k steps leaves at most ceil(L / k): the gaps between
  // consecutive points are floor or ceil of L / k. Below k, one round ends it.
  uint32_t rounds = 0;
  for (uint64_t length = hi - lo; length > 1; ++rounds)
    length = length < arity ? 1 : length / arity + (length % arity != 0 ? 1 : 0);
  return rounds;
}

StepBisection::StepBisection(uint64_t lo, uint64_t hi, uint32_t arity, const hash::Digest &agreed,
                             const hash::Digest &a_hi, const hash::Digest &b_hi)
    : lo_(lo), hi_(hi), arity_(arity), agreed_(agreed), a_hi_(a_hi), b_hi_(b_hi) {
  check_interval(lo, hi, arity, "step bisection");
  if (a_hi == b_hi)
    fail(Status::kInvalidArgument, "step bisection: both parties claim {} for step {}: nothing is disputed",
         a_hi.hex(), hi);
}

std::vector<uint64_t> StepBisection::points() const {
  if (done()) fail(Status::kState, "step bisection: done at step {}", hi_);
  return bisection_points(lo_, hi_, arity_);
}

void StepBisection::play_round(const std::vector<hash::Digest> &a, const std::vector<hash::Digest> &b) {
  const std::vector<uint64_t> p = points();
  for (const auto &[claims, party] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
    if (claims->size() != p.size())
      fail(Status::kInvalidArgument, "step bisection: party {} claims {} digests, the round over ({}, {}] has {} points",
           party, claims->size(), lo_, hi_, p.size());
  size_t j = 0;
  while (j < p.size() && a[j] == b[j]) ++j;
  if (j > 0) {
    lo_ = p[j - 1];
    agreed_ = a[j - 1];
  }
  if (j < p.size()) {
    hi_ = p[j];
    a_hi_ = a[j];
    b_hi_ = b[j];
  }
  ++rounds_;
}

}  // namespace pot::dispute
