#include "bond/deterrence.h"

#include <cmath>

#include "common/error.h"

namespace pot::bond {

namespace {

// GCC and Clang's 128-bit integer (the project's compilers, docs/building.md).
__extension__ typedef unsigned __int128 u128;

// Whether p * b >= (1 - p) * r, evaluated without rounding: p is a double
// m * 2^e (m a 53-bit integer), so both sides are integers times 2^e and
// the comparison is m * b >= (2^-e - m) * r, done in 128-bit integers
// (2^-e - m > 0 since p < 1 here, and -e <= 1074 is handled by scaling).
bool deters(uint64_t b, uint64_t r, double p) {
  int e = 0;
  const double frac = std::frexp(p, &e);  // p = frac * 2^e, frac in [0.5, 1)
  // p = m * 2^(e - 53), m = frac * 2^53 an integer below 2^53.
  const auto m = static_cast<u128>(std::ldexp(frac, 53));
  const int shift = 53 - e;  // 1 - p = (2^shift - m) * 2^(e - 53)
  if (shift >= 120) {
    // p < 2^-66: (2^shift - m) r >= 2^119 r, m b < 2^117: deters only for r = 0.
    return r == 0;
  }
  const u128 one = u128{1} << shift;
  const u128 rest = one - m;  // > 0 while p < 1
  // Both products fit 128 bits: m < 2^53, b < 2^64; rest < 2^120 would not,
  // so compare in two steps when r is large.
  const u128 lhs = m * b;  // < 2^117
  if (r != 0 && rest > (~u128{0}) / r) return false;
  return lhs >= rest * r;
}

}  // namespace

uint64_t deterrent_bond(uint64_t reward, double p) {
  if (!(p > 0 && p <= 1))
    fail(Status::kInvalidArgument, "detection probability {} is not in (0, 1]: with p = 0 no bond deters forging",
         p + 0.0);  // -0 prints as 0
  if (p == 1 || reward == 0) return 0;
  // A first guess from floating point, then the exact test moves it to the
  // least deterring integer.
  const long double guess = std::ceil(static_cast<long double>(reward) * (1 - static_cast<long double>(p)) /
                                      static_cast<long double>(p));
  if (guess > 18446744073709551615.0L) {
    if (!deters(UINT64_MAX, reward, p))
      fail(Status::kOutOfRange, "a reward of {} at detection probability {} needs a bond past 2^64 - 1", reward, p);
    return UINT64_MAX;  // only reachable through rounding of the guess
  }
  uint64_t b = static_cast<uint64_t>(guess);
  while (b > 0 && deters(b - 1, reward, p)) --b;
  while (!deters(b, reward, p)) {
    if (b == UINT64_MAX)
      fail(Status::kOutOfRange, "a reward of {} at detection probability {} needs a bond past 2^64 - 1", reward, p);
    ++b;
  }
  return b;
}

}  // namespace pot::bond
