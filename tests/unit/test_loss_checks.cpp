// Auxiliary loss-curve checks: synthetic honest curves (exponential and
// power-law decay with deterministic noise) raise nothing; frozen, spiking,
// collapsing, never-decreasing and non-finite curves raise exactly the flags
// docs/losscheck.md defines, on exactly the steps it says; thresholds are
// checked against hand-computed values; every bad parameter is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include "losscheck/loss_checks.h"
#include "core_test_util.h"

using namespace pot;
using namespace pot::losscheck;
using pot::test::status_of;

namespace {

using Kind = LossFlagKind;
using Seen = std::tuple<LossFlagKind, uint64_t, uint64_t>;  // kind, first step, last step

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// splitmix64: a fixed, portable generator (std:: distributions are not
// specified bit for bit, so they would make the curves platform-dependent).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53 * 2 - 1; }  // [-1, 1)
  // Sum of three uniforms: mean 0, variance 1, bounded by 3 (so "noise" never
  // makes a loss negative at the levels used here).
  double noise() { return uniform() + uniform() + uniform(); }
  // Standard normal (Box-Muller), for right-skewed lognormal noise: per-batch
  // losses spike up more than they dip.
  double normal() {
    const double u = (uniform() + 1) / 2 + 0x1p-54;  // (0, 1]
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * (uniform() + 1) / 2);
  }
};

// An honest run: floor + (start - floor) * exp(-t / tau), times (1 + sd * noise).
std::vector<double> honest(size_t n, double tau, double sd, uint64_t seed, double start = 2.5,
                           double floor = 0.3) {
  Rng rng{seed};
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (floor + (start - floor) * std::exp(-static_cast<double>(i + 1) / tau)) *
           (1 + sd * rng.noise());
  return v;
}

// The same decay with lognormal noise of log-sd sd (mean factor 1).
std::vector<double> honest_skewed(size_t n, double tau, double sd, uint64_t seed) {
  Rng rng{seed};
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (0.3 + 2.2 * std::exp(-static_cast<double>(i + 1) / tau)) *
           std::exp(sd * rng.normal() - sd * sd / 2);
  return v;
}

// A level with multiplicative noise.
std::vector<double> flat(size_t n, double level, double sd, uint64_t seed) {
  Rng rng{seed};
  std::vector<double> v(n);
  for (double &x : v) x = level * (1 + sd * rng.noise());
  return v;
}

std::vector<Seen> seen(const std::vector<LossFlag> &flags) {
  std::vector<Seen> out;
  for (const LossFlag &f : flags) out.emplace_back(f.kind, f.first_step, f.last_step);
  return out;
}

std::string describe(const std::vector<LossFlag> &flags) {
  std::string s;
  for (const LossFlag &f : flags)
    s += std::string(loss_flag_name(f.kind)) + " [" + std::to_string(f.first_step) + ", " +
         std::to_string(f.last_step) + "]: " + f.message + "\n";
  return s;
}

std::vector<LossFlag> check(const std::vector<double> &losses, const LossCheckParams &p = {}) {
  return check_loss_curve(losses, p);
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(LossChecks, FlagNamesAreStable) {
  EXPECT_STREQ(loss_flag_name(Kind::kNoDecrease), "no_decrease");
  EXPECT_STREQ(loss_flag_name(Kind::kImplausibleRate), "implausible_rate");
  EXPECT_STREQ(loss_flag_name(Kind::kFrozen), "frozen");
  EXPECT_STREQ(loss_flag_name(Kind::kRegression), "regression");
  EXPECT_STREQ(loss_flag_name(Kind::kNonFinite), "non_finite");
  EXPECT_STREQ(loss_flag_name(static_cast<Kind>(99)), "unknown");
  EXPECT_EQ(static_cast<int>(Kind::kNoDecrease), 0);
  EXPECT_EQ(static_cast<int>(Kind::kNonFinite), 4);
}

TEST(LossChecks, HonestCurvesRaiseNoFlags) {
  for (uint64_t seed : {1u, 2u, 3u, 17u, 12345u})
    for (double sd : {0.01, 0.05, 0.1, 0.2})
      for (double tau : {10.0, 30.0, 200.0, 800.0}) {
        auto flags = check(honest(3000, tau, sd, seed));
        EXPECT_TRUE(flags.empty()) << "seed " << seed << " sd " << sd << " tau " << tau << "\n"
                                   << describe(flags);
        if (sd > 0.1) continue;  // lognormal noise past 10% has real 2x spikes
        flags = check(honest_skewed(3000, tau, sd, seed));
        EXPECT_TRUE(flags.empty())
            << "skewed, seed " << seed << " sd " << sd << " tau " << tau << "\n"
            << describe(flags);
      }
  // Noise-free decay, with tau long enough that it has not reached the floor
  // in double precision.
  EXPECT_TRUE(check(honest(3000, 400, 0, 1)).empty());
  // Power-law decay with noise, losses of order 10 and of order 0.01.
  for (double scale : {10.0, 0.01}) {
    Rng rng{99};
    std::vector<double> v(5000);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] =
          scale * (0.2 + 1 / std::sqrt(1 + static_cast<double>(i) / 10)) * (1 + 0.1 * rng.noise());
    const auto flags = check(v);
    EXPECT_TRUE(flags.empty()) << describe(flags);
  }
}

TEST(LossChecks, FrozenStretchIsOneFlagOnItsSteps) {
  std::vector<double> v = honest(1000, 200, 0.05, 7);
  const double level = 0.3 + 2.2 * std::exp(-401.0 / 200);  // noise-free value at step 401
  for (size_t i = 400; i < 430; ++i) v[i] = level;          // steps 401..430
  const auto flags = check(v);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kFrozen, 401, 430}})) << describe(flags);
  EXPECT_TRUE(contains(flags[0].message, "each of the 30 steps 401-430")) << flags[0].message;
}

TEST(LossChecks, FrozenLengthAndEpsilon) {
  std::vector<double> v = honest(200, 100, 0.05, 3);
  for (size_t i = 100; i < 109; ++i) v[i] = 1.0;  // 9 equal steps: one short of the default
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
  v[109] = 1.0;  // 10 steps: 101..110
  EXPECT_EQ(seen(check(v)), (std::vector<Seen>{{Kind::kFrozen, 101, 110}}));

  // A run that jitters by 1e-9: not equal, so the default (epsilon 0) does not
  // see it; epsilon 1e-8 does, and the message gives the range of values.
  std::vector<double> w = honest(200, 100, 0.05, 3);
  for (size_t i = 50; i < 80; ++i) w[i] = 1.0 + (i % 2 ? 1e-9 : 0);  // steps 51..80
  EXPECT_TRUE(check(w).empty()) << describe(check(w));
  LossCheckParams p;
  p.frozen_epsilon = 1e-8;
  const auto flags = check(w, p);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kFrozen, 51, 80}})) << describe(flags);
  EXPECT_TRUE(contains(flags[0].message, "within [1, 1.000000001] over the 30 steps 51-80"))
      << flags[0].message;
}

TEST(LossChecks, NoiseFreeCurveThatReachesItsFloorIsFrozen) {
  // 0.3 + 2.2 * exp(-t / 30) rounds to exactly 0.3 from step 1168 on (with
  // glibc; computed below rather than assumed), and to the few doubles just
  // above 0.3 before: the committed loss really is frozen there, and with
  // epsilon 0 each run of equal values is a flag.
  const std::vector<double> v = honest(3000, 30, 0, 1);
  ASSERT_EQ(v.back(), 0.3);
  size_t equal_from = v.size() - 1;  // first index of the final run of equal values
  while (equal_from > 0 && v[equal_from - 1] == v.back()) --equal_from;
  auto flags = check(v);
  ASSERT_FALSE(flags.empty());
  for (const LossFlag &f : flags) EXPECT_EQ(f.kind, Kind::kFrozen) << f.message;
  EXPECT_EQ(seen({flags.back()}), (std::vector<Seen>{{Kind::kFrozen, equal_from + 1, 3000}}));
  EXPECT_TRUE(contains(flags.back().message, "loss is 0.3 at each of the " +
                                                 std::to_string(3000 - equal_from) + " steps"))
      << flags.back().message;
  // With an epsilon the stretch is one flag, from the first step after which
  // every step is within 1e-12 of the one before.
  size_t from = v.size() - 1;
  while (from > 0 && std::fabs(v[from] - v[from - 1]) <= 1e-12) --from;
  LossCheckParams p;
  p.frozen_epsilon = 1e-12;
  flags = check(v, p);
  EXPECT_EQ(seen(flags), (std::vector<Seen>{{Kind::kFrozen, from + 1, 3000}})) << describe(flags);
}

TEST(LossChecks, SpikeIsARegressionOnThatStep) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::vector<double> v = honest(1000, 200, 0.05, seed);
    v[499] = 5 * (v[498] + v[500]) / 2;  // step 500: five times its neighbours
    const auto flags = check(v);
    ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kRegression, 500, 500}})) << describe(flags);
    EXPECT_TRUE(contains(flags[0].message, "at step 500")) << flags[0].message;
    EXPECT_TRUE(contains(flags[0].message, "median")) << flags[0].message;
    EXPECT_TRUE(contains(flags[0].message, "of steps 480-499")) << flags[0].message;
  }
}

TEST(LossChecks, JumpBackUpIsARegressionUntilTheWindowCatchesUp) {
  // Decay to ~0.3, then at step 701 the loss is back at its initial level (a
  // reset or a swapped state) and stays there. Steps 701..710 each exceed the
  // median of the 20 steps before them; from step 711 the window holds as
  // many high as low values and the new level is the norm. The run also ends
  // above where it started: no decrease.
  std::vector<double> v = honest(1000, 60, 0.02, 5);
  const std::vector<double> high = flat(300, 2.5, 0.02, 6);
  std::copy(high.begin(), high.end(), v.begin() + 700);
  const auto flags = check(v);
  ASSERT_EQ(seen(flags),
            (std::vector<Seen>{{Kind::kNoDecrease, 1, 1000}, {Kind::kRegression, 701, 710}}))
      << describe(flags);
  EXPECT_TRUE(contains(flags[1].message, "each of the 10 steps 701-710 exceeds its threshold"))
      << flags[1].message;
}

TEST(LossChecks, FlatThenCollapseIsAnImplausibleRate) {
  // Flat (no learning) for 500 steps, then at step 501 the loss falls to
  // near zero and stays. Steps 501..511 are each more than 90% below the
  // median of the 20 steps before them: up to step 511 that window holds at
  // least 10 flat values, so its median is at least half the flat level;
  // from step 512 it is mostly low values.
  std::vector<double> v = flat(500, 2.3, 0.02, 11);
  const std::vector<double> low = flat(100, 0.001, 0.02, 12);
  v.insert(v.end(), low.begin(), low.end());
  const auto flags = check(v);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kImplausibleRate, 501, 511}}))
      << describe(flags);
  EXPECT_TRUE(contains(flags[0].message, "at step 501")) << flags[0].message;
  EXPECT_TRUE(contains(flags[0].message, "of steps 481-500")) << flags[0].message;
  EXPECT_TRUE(contains(flags[0].message, "median of steps 501-520")) << flags[0].message;
  EXPECT_TRUE(contains(flags[0].message, "each of the 11 steps 501-511")) << flags[0].message;
}

TEST(LossChecks, CollapseInTheLastStepsIsStillFlagged) {
  // Collapse with 10 steps left: the rate rule still has half a window after
  // the step (10 of 20), so it flags the collapse at step 591.
  std::vector<double> v = flat(590, 2.3, 0.02, 21);
  std::vector<double> low = flat(10, 0.001, 0.02, 22);
  v.insert(v.end(), low.begin(), low.end());
  EXPECT_EQ(seen(check(v)), (std::vector<Seen>{{Kind::kImplausibleRate, 591, 591}}))
      << describe(check(v));
  // With 9 steps left the rate rule cannot judge it. The last window is then
  // mostly the flat level, so its median is too: with little noise, the run
  // shows no decrease (with more noise the median of the last window, the
  // 10th and 11th of its values, is the low edge of the noise: the blind spot
  // that docs/losscheck.md describes).
  v = flat(591, 2.3, 0.002, 21);
  low = flat(9, 0.001, 0.02, 22);
  v.insert(v.end(), low.begin(), low.end());
  EXPECT_EQ(seen(check(v)), (std::vector<Seen>{{Kind::kNoDecrease, 1, 600}})) << describe(check(v));
}

TEST(LossChecks, RunThatNeverDecreases) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    // Flat with noise.
    auto flags = check(flat(500, 2.3, 0.05, seed));
    ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kNoDecrease, 1, 500}})) << describe(flags);
    EXPECT_TRUE(contains(flags[0].message, "(steps 1-20)")) << flags[0].message;
    EXPECT_TRUE(contains(flags[0].message, "(steps 481-500)")) << flags[0].message;
    // Slowly rising.
    std::vector<double> v = flat(800, 1, 0.05, seed);
    for (size_t i = 0; i < v.size(); ++i) v[i] *= 2 + 0.4 * static_cast<double>(i) / 800;
    flags = check(v);
    EXPECT_EQ(seen(flags), (std::vector<Seen>{{Kind::kNoDecrease, 1, 800}})) << describe(flags);
  }
  // A decrease of 1% is within the default 2% tolerance; 3% is not.
  std::vector<double> v(100, 1.0);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i < 50 ? 1.0 : 0.99) + (i % 2 ? 1e-3 : 0);
  EXPECT_EQ(seen(check(v)), (std::vector<Seen>{{Kind::kNoDecrease, 1, 100}}));
  for (size_t i = 50; i < v.size(); ++i) v[i] -= 0.02;
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
}

TEST(LossChecks, NoDecreaseMustExceedTheNoise) {
  // 10% noise per step; the last 20 steps are 5% lower. 5% is past the
  // relative tolerance (2%), but the standard error of each 20-step median is
  // about 1.2533 * 0.2 / sqrt(20) = 0.056, so 3 standard errors of the
  // difference are ~0.24 (12%): the decrease is within the noise.
  std::vector<double> v = flat(100, 2.0, 0.1, 8);
  for (size_t i = 80; i < 100; ++i) v[i] *= 0.95;
  auto flags = check(v);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kNoDecrease, 1, 100}})) << describe(flags);
  EXPECT_TRUE(contains(flags[0].message, "standard errors")) << flags[0].message;
  LossCheckParams p;
  p.decrease_sigmas = 0;  // relative tolerance only
  EXPECT_TRUE(check(v, p).empty()) << describe(check(v, p));
  // A 30% decrease is well outside the noise.
  for (size_t i = 80; i < 100; ++i) v[i] *= 0.7 / 0.95;
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
}

TEST(LossChecks, ConstantRunSortsNoDecreaseBeforeFrozen) {
  const auto flags = check(std::vector<double>(100, 0.7));
  EXPECT_EQ(seen(flags), (std::vector<Seen>{{Kind::kNoDecrease, 1, 100}, {Kind::kFrozen, 1, 100}}))
      << describe(flags);
}

TEST(LossChecks, NonFiniteLossesAreFlaggedRunByRun) {
  std::vector<double> v = honest(1000, 200, 0.05, 9);
  v[99] = kNaN;                     // step 100
  v[199] = v[200] = v[201] = kInf;  // steps 200-202
  v[299] = -kInf;                   // step 300
  v[399] = kNaN;                    // steps 400-401
  v[400] = kInf;
  v[699] = 5 * v[698];  // a real spike at step 700 is still seen
  const auto flags = check(v);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kNonFinite, 100, 100},
                                            {Kind::kNonFinite, 200, 202},
                                            {Kind::kNonFinite, 300, 300},
                                            {Kind::kNonFinite, 400, 401},
                                            {Kind::kRegression, 700, 700}}))
      << describe(flags);
  EXPECT_EQ(flags[0].message, "loss is not finite at step 100 (nan)");
  EXPECT_EQ(flags[1].message, "loss is not finite at steps 200-202 (3 +inf)");
  EXPECT_EQ(flags[2].message, "loss is not finite at step 300 (-inf)");
  EXPECT_EQ(flags[3].message, "loss is not finite at steps 400-401 (1 nan, 1 +inf)");

  // Only NaN: one flag, and no other rule sees anything.
  EXPECT_EQ(seen(check(std::vector<double>(50, kNaN))),
            (std::vector<Seen>{{Kind::kNonFinite, 1, 50}}));
  // A NaN splits a frozen stretch (15 + 15 equal steps around step 16).
  std::vector<double> w(31, 1.5);
  w[15] = kNaN;
  EXPECT_EQ(seen(check(w)),
            (std::vector<Seen>{
                {Kind::kFrozen, 1, 15}, {Kind::kNonFinite, 16, 16}, {Kind::kFrozen, 17, 31}}));
  // A NaN at the start does not stop the no-decrease rule, which compares the
  // first and last 20 finite losses.
  std::vector<double> x = flat(100, 2.0, 0.05, 4);
  x[0] = kNaN;
  EXPECT_EQ(seen(check(x)),
            (std::vector<Seen>{{Kind::kNonFinite, 1, 1}, {Kind::kNoDecrease, 2, 100}}));
  EXPECT_TRUE(contains(check(x)[1].message, "(steps 2-21)")) << check(x)[1].message;
}

TEST(LossChecks, RegressionThresholdKnownAnswer) {
  // Window of 20: ten 1.0 and ten 1.2. Median 1.1, MAD 0.1, robust sd
  // 0.14826. Defaults: threshold = 1.1 + max(6 * 0.14826, 1.0 * 1.1) = 2.2.
  std::vector<double> v(21);
  for (size_t i = 0; i < 20; ++i) v[i] = i % 2 ? 1.2 : 1.0;
  v[20] = 2.19;
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
  v[20] = 2.21;
  const auto flags = check(v);
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kRegression, 21, 21}})) << describe(flags);
  EXPECT_TRUE(contains(flags[0].message,
                       "loss 2.21 at step 21 is +100.9% from the median 1.1 of "
                       "steps 1-20, above the threshold 2.2"))
      << flags[0].message;
  EXPECT_TRUE(contains(flags[0].message, "6 robust sd = 0.88956 and 100% of |median|"))
      << flags[0].message;
  // With half the relative margin the sigma term decides: 1.1 + 0.88956.
  LossCheckParams p;
  p.regression_min_increase = 0.5;
  v[20] = 1.98;
  EXPECT_TRUE(check(v, p).empty());
  v[20] = 1.99;
  EXPECT_EQ(seen(check(v, p)), (std::vector<Seen>{{Kind::kRegression, 21, 21}}));
  EXPECT_TRUE(contains(check(v, p)[0].message, "threshold 1.98956")) << check(v, p)[0].message;
  // Without the sigma term the relative term alone: 1.1 * 1.5 = 1.65.
  p.regression_sigmas = 0;
  v[20] = 1.64;
  EXPECT_TRUE(check(v, p).empty());
  v[20] = 1.66;
  EXPECT_EQ(seen(check(v, p)), (std::vector<Seen>{{Kind::kRegression, 21, 21}}));
  // Without the relative term the sigma term alone: 1.1 + 0.88956.
  p = {};
  p.regression_min_increase = 0;
  v[20] = 1.98;
  EXPECT_TRUE(check(v, p).empty());
  v[20] = 1.99;
  EXPECT_EQ(seen(check(v, p)), (std::vector<Seen>{{Kind::kRegression, 21, 21}}));
}

TEST(LossChecks, RateThresholdKnownAnswer) {
  // Twenty steps alternating 1.9 / 2.1 (median 2.0), then ten low steps: the
  // rule flags a step more than 90% below 2.0, i.e. below 0.2, when the
  // median of the (here 10) steps from it is below 0.2 too.
  auto run = [](double low) {
    std::vector<double> v(30);
    for (size_t i = 0; i < 20; ++i) v[i] = i % 2 ? 2.1 : 1.9;
    for (size_t i = 20; i < 30; ++i) v[i] = low - (i % 2 ? 0.001 : 0);
    return v;
  };
  EXPECT_TRUE(check(run(0.21)).empty()) << describe(check(run(0.21)));
  const auto flags = check(run(0.19));
  ASSERT_EQ(seen(flags), (std::vector<Seen>{{Kind::kImplausibleRate, 21, 21}})) << describe(flags);
  EXPECT_TRUE(contains(flags[0].message, "(below 0.2)")) << flags[0].message;
  EXPECT_TRUE(contains(flags[0].message, "median of steps 21-30")) << flags[0].message;
  // A single low step that does not stay low is not a collapse.
  std::vector<double> v = run(0.19);
  for (size_t i = 21; i < 30; ++i) v[i] = i % 2 ? 2.1 : 1.9;
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
}

TEST(LossChecks, ShortAndEmptySequences) {
  EXPECT_TRUE(check({}).empty());
  // 20 steps (one window): a spike on the last step has no full window
  // before it; a step later it has.
  std::vector<double> v = honest(20, 100, 0.02, 1);
  v[19] *= 10;
  EXPECT_TRUE(check(v).empty()) << describe(check(v));
  v = honest(21, 100, 0.02, 1);
  v[20] *= 10;
  EXPECT_EQ(seen(check(v)), (std::vector<Seen>{{Kind::kRegression, 21, 21}}));
  // No decrease needs two disjoint windows: 39 flat steps raise nothing, 40 do.
  EXPECT_TRUE(check(flat(39, 2.0, 0.05, 1)).empty());
  EXPECT_EQ(seen(check(flat(40, 2.0, 0.05, 1))), (std::vector<Seen>{{Kind::kNoDecrease, 1, 40}}));
  // Fewer equal steps than frozen_min_steps: nothing.
  EXPECT_TRUE(check(std::vector<double>(9, 1.0)).empty());
  // A larger window makes every window rule need more steps.
  LossCheckParams p;
  p.window = 50;
  EXPECT_TRUE(check(flat(99, 2.0, 0.05, 1), p).empty());
  EXPECT_EQ(seen(check(flat(100, 2.0, 0.05, 1), p)),
            (std::vector<Seen>{{Kind::kNoDecrease, 1, 100}}));
}

TEST(LossChecks, FlagLimitBoundsAHostileSequence) {
  // Ten million steps alternating NaN and a finite value: five million
  // non-finite runs. Only max_flags (1000) are kept and formatted.
  std::vector<double> v(10'000'000);
  // The finite values decrease (the no-decrease rule is satisfied) and are
  // distinct (nothing is frozen).
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? 1e8 - static_cast<double>(i) : kNaN;
  const auto flags = check(v);
  ASSERT_EQ(flags.size(), 1000u);
  EXPECT_EQ(seen({flags.front()}), (std::vector<Seen>{{Kind::kNonFinite, 1, 1}}));
  EXPECT_EQ(seen({flags.back()}), (std::vector<Seen>{{Kind::kNonFinite, 1999, 1999}}));
  EXPECT_TRUE(contains(flags.back().message, "(flag limit reached: 4999000 more flags not listed)"))
      << flags.back().message;
  EXPECT_FALSE(contains(flags[998].message, "flag limit")) << flags[998].message;

  // The limit applies after sorting across kinds.
  std::vector<double> w(100, 0.7);
  w.push_back(kNaN);
  LossCheckParams p;
  p.max_flags = 2;
  const auto two = check(w, p);
  ASSERT_EQ(seen(two), (std::vector<Seen>{{Kind::kNoDecrease, 1, 100}, {Kind::kFrozen, 1, 100}}));
  EXPECT_TRUE(contains(two[1].message, "(flag limit reached: 1 more flags not listed)"));
  p.max_flags = 3;
  EXPECT_FALSE(contains(check(w, p).back().message, "flag limit"));
}

TEST(LossChecks, LongHonestRunIsDeterministic) {
  const std::vector<double> v = honest(200'000, 20'000, 0.1, 42);
  const auto a = check(v), b = check(v);
  EXPECT_TRUE(a.empty()) << describe(a);
  EXPECT_EQ(describe(a), describe(b));
}

TEST(LossChecks, EachBadParameterIsRefused) {
  auto refused = [](const std::function<void(LossCheckParams &)> &set, const std::string &name) {
    LossCheckParams p;
    set(p);
    std::string what;
    try {
      validate(p);
    } catch (const Error &e) {
      what = e.what();
      EXPECT_EQ(e.status(), Status::kInvalidArgument) << name;
    }
    EXPECT_TRUE(contains(what, name)) << "expected a message about " << name << ", got: " << what;
    // check_loss_curve validates too, even with nothing to check.
    EXPECT_EQ(status_of([&] { check_loss_curve({}, p); }), Status::kInvalidArgument) << name;
  };
  refused([](LossCheckParams &p) { p.window = 0; }, "window is 0");
  refused([](LossCheckParams &p) { p.window = kMaxLossWindow + 1; }, "window is 10001");
  refused([](LossCheckParams &p) { p.decrease_tolerance = -0.01; }, "decrease_tolerance");
  refused([](LossCheckParams &p) { p.decrease_tolerance = 1; }, "decrease_tolerance");
  refused([](LossCheckParams &p) { p.decrease_tolerance = kNaN; }, "decrease_tolerance");
  refused([](LossCheckParams &p) { p.decrease_sigmas = -1; }, "decrease_sigmas");
  refused([](LossCheckParams &p) { p.decrease_sigmas = kInf; }, "decrease_sigmas");
  refused([](LossCheckParams &p) { p.decrease_sigmas = kNaN; }, "decrease_sigmas");
  refused([](LossCheckParams &p) { p.max_drop = 0; }, "max_drop");
  refused([](LossCheckParams &p) { p.max_drop = 1.5; }, "max_drop");
  refused([](LossCheckParams &p) { p.max_drop = kNaN; }, "max_drop");
  refused([](LossCheckParams &p) { p.frozen_min_steps = 0; }, "frozen_min_steps");
  refused([](LossCheckParams &p) { p.frozen_min_steps = 1; }, "frozen_min_steps");
  refused([](LossCheckParams &p) { p.frozen_epsilon = -1e-9; }, "frozen_epsilon");
  refused([](LossCheckParams &p) { p.frozen_epsilon = kInf; }, "frozen_epsilon");
  refused([](LossCheckParams &p) { p.frozen_epsilon = kNaN; }, "frozen_epsilon");
  refused([](LossCheckParams &p) { p.regression_sigmas = -1; }, "regression_sigmas");
  refused([](LossCheckParams &p) { p.regression_sigmas = kInf; }, "regression_sigmas");
  refused([](LossCheckParams &p) { p.regression_sigmas = kNaN; }, "regression_sigmas");
  refused([](LossCheckParams &p) { p.regression_min_increase = -0.5; }, "regression_min_increase");
  refused([](LossCheckParams &p) { p.regression_min_increase = kInf; }, "regression_min_increase");
  refused([](LossCheckParams &p) { p.regression_min_increase = kNaN; }, "regression_min_increase");
  refused([](LossCheckParams &p) { p.max_flags = 0; }, "max_flags");

  // The defaults and every boundary value are accepted.
  EXPECT_EQ(status_of([] { validate(LossCheckParams{}); }), Status::kOk);
  LossCheckParams edge;
  edge.window = 1;
  edge.decrease_tolerance = 0;
  edge.decrease_sigmas = 0;
  edge.max_drop = 1;
  edge.frozen_min_steps = 2;
  edge.frozen_epsilon = 0;
  edge.regression_sigmas = 0;
  edge.regression_min_increase = 0;
  edge.max_flags = 1;
  EXPECT_EQ(status_of([&] { validate(edge); }), Status::kOk);
  edge.window = kMaxLossWindow;
  EXPECT_EQ(status_of([&] { check_loss_curve(honest(100, 10, 0.1, 1), edge); }), Status::kOk);
}
