// Step bisection (docs/PROTOCOL.md 21.1): the points of a round, the round
// bound, and disputes between an honest party and a forger (or a liar) over
// runs of a deterministic state machine, at every forged position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core_test_util.h"
#include "dispute/bisection.h"
#include "dispute/timed.h"

namespace pot::dispute_test {
namespace {

using dispute::bisection_points;
using dispute::bisection_rounds;
using dispute::StepBisection;
using hash::Digest;
using test::status_of;

Digest state_label(const std::string &s) { return hash::sha256(ByteView(reinterpret_cast<const uint8_t *>(s.data()), s.size())); }

// A deterministic training stand-in: S_t = H(t, S_{t-1}). A run forged at
// step f holds another S_f and trains on from it, so every later state
// differs too (as a real forged run's do).
std::vector<Digest> trajectory(uint64_t n, uint64_t forged_at = 0) {
  std::vector<Digest> s{state_label("S_0")};
  for (uint64_t t = 1; t <= n; ++t)
    s.push_back(t == forged_at ? state_label("forged " + std::to_string(t)) : state_label(std::to_string(t) + s.back().hex()));
  return s;
}

// What the referee does once the bisection is down to step i: recomputes S_i
// from the agreed S_{i-1} (one step; the operator phase narrows it further).
Digest referee_step(uint64_t i, const Digest &pre) { return state_label(std::to_string(i) + pre.hex()); }

std::vector<Digest> claims(const std::vector<Digest> &run, const std::vector<uint64_t> &points) {
  std::vector<Digest> out;
  for (uint64_t p : points) out.push_back(run.at(p));
  return out;
}

TEST(StepBisection, PointsSpreadEvenlyInsideTheInterval) {
  EXPECT_EQ(bisection_points(0, 200, 2), (std::vector<uint64_t>{100}));
  EXPECT_EQ(bisection_points(0, 200, 4), (std::vector<uint64_t>{50, 100, 150}));
  EXPECT_EQ(bisection_points(0, 200, 3), (std::vector<uint64_t>{66, 133}));
  EXPECT_EQ(bisection_points(100, 107, 4), (std::vector<uint64_t>{101, 103, 105}));
  EXPECT_EQ(bisection_points(10, 13, 8), (std::vector<uint64_t>{11, 12}));  // fewer steps than the arity: all
  EXPECT_TRUE(bisection_points(41, 42, 2).empty());
  // Near 2^64, without overflow.
  const uint64_t top = UINT64_MAX;
  EXPECT_EQ(bisection_points(0, top, 2), (std::vector<uint64_t>{top / 2}));
  EXPECT_EQ(bisection_points(top - 256, top, 256).back(), top - 1);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t lo = rng() >> (rng() % 64), length = 1 + (rng() >> (rng() % 64)) % (UINT64_MAX - lo);
    const uint32_t k = 2 + static_cast<uint32_t>(rng() % 255);
    const std::vector<uint64_t> p = bisection_points(lo, lo + length, k);
    ASSERT_EQ(p.size(), std::min<uint64_t>(k, length) - 1);
    ASSERT_TRUE(std::is_sorted(p.begin(), p.end()));
    ASSERT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
    if (!p.empty()) {
      ASSERT_TRUE(p.front() > lo && p.back() < lo + length);
    }
    // No gap (with the ends) longer than ceil(length / k), the bound's step.
    uint64_t prev = lo, widest = 0;
    for (uint64_t x : p) widest = std::max(widest, x - std::exchange(prev, x));
    widest = std::max(widest, lo + length - prev);
    ASSERT_LE(widest, length < k ? 1 : length / k + (length % k != 0));
  }
}

TEST(StepBisection, TheRoundBound) {
  EXPECT_EQ(bisection_rounds(0, 1, 2), 0u);
  EXPECT_EQ(bisection_rounds(0, 2, 2), 1u);
  EXPECT_EQ(bisection_rounds(0, 200, 2), 8u);  // 2^7 < 200 <= 2^8
  EXPECT_EQ(bisection_rounds(0, 200, 4), 4u);  // 4^3 < 200 <= 4^4
  EXPECT_EQ(bisection_rounds(0, 200, 16), 2u);
  EXPECT_EQ(bisection_rounds(0, 200, 256), 1u);
  EXPECT_EQ(bisection_rounds(0, UINT64_MAX, 2), 64u);
  for (uint32_t k : {2u, 3u, 7u, 16u})
    for (uint64_t length = 1; length < 5000; ++length) {
      uint32_t r = 0;
      for (uint64_t power = 1; power < length; power *= k) ++r;  // ceil(log_k(length))
      ASSERT_EQ(bisection_rounds(7, 7 + length, k), r) << length << " steps, arity " << k;
    }
}

TEST(StepBisection, BadArgumentsAreRefused) {
  const Digest a = state_label("a"), b = state_label("b");
  EXPECT_EQ(status_of([] { bisection_points(5, 5, 2); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bisection_points(6, 5, 2); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bisection_points(0, 5, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bisection_points(0, 5, 257); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bisection_rounds(0, 5, 0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { StepBisection(0, 10, 2, state_label("S_0"), a, a); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { StepBisection(10, 10, 2, state_label("S_0"), a, b); }), Status::kInvalidArgument);
  StepBisection s(0, 10, 4, state_label("S_0"), a, b);
  const std::vector<uint64_t> p = s.points();
  ASSERT_EQ(p.size(), 3u);
  // A party answering with the wrong number of digests changes nothing.
  EXPECT_EQ(status_of([&] { s.play_round({a, a}, {a, a, a}); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { s.play_round({a, a, a}, {a, a, a, a}); }), Status::kInvalidArgument);
  EXPECT_EQ((std::pair{s.lo(), s.hi()}), (std::pair{uint64_t{0}, uint64_t{10}}));
  EXPECT_EQ(s.rounds_played(), 0u);
  while (!s.done()) s.play_round(std::vector<Digest>(s.points().size(), a), std::vector<Digest>(s.points().size(), a));
  EXPECT_EQ(s.hi(), 10u);  // they agreed everywhere before 10
  EXPECT_EQ(status_of([&] { s.points(); }), Status::kState);
  EXPECT_EQ(status_of([&] { s.play_round({}, {}); }), Status::kState);
}

// The proof of the issue: a 200-step run with one forged step, at every
// position, for several arities, the forger as either party: the
// bisection ends at exactly the forged step, within the k-ary bound (which
// some position reaches), and the referee's one step names the forger.
TEST(StepBisection, FindsTheForgedStepAtEveryPosition) {
  constexpr uint64_t kSteps = 200;
  const std::vector<Digest> honest = trajectory(kSteps);
  for (uint32_t k : {2u, 3u, 4u, 8u, 16u, 256u}) {
    const uint32_t bound = bisection_rounds(0, kSteps, k);
    uint32_t most = 0;
    for (uint64_t f = 1; f <= kSteps; ++f) {
      const std::vector<Digest> forged = trajectory(kSteps, f);
      for (bool forger_is_a : {false, true}) {
        const auto &a = forger_is_a ? forged : honest;
        const auto &b = forger_is_a ? honest : forged;
        StepBisection s(0, kSteps, k, honest[0], a[kSteps], b[kSteps]);
        while (!s.done()) {
          const std::vector<uint64_t> p = s.points();
          s.play_round(claims(a, p), claims(b, p));
        }
        ASSERT_EQ(s.hi(), f) << "arity " << k;
        ASSERT_EQ(s.agreed(), honest[f - 1]);
        ASSERT_LE(s.rounds_played(), bound);
        most = std::max(most, s.rounds_played());
        // The referee recomputes step f from the agreed S_{f-1}.
        const Digest truth = referee_step(f, s.agreed());
        ASSERT_EQ(truth, honest[f]);
        ASSERT_EQ(forger_is_a ? s.b_hi() : s.a_hi(), truth);
        ASSERT_NE(forger_is_a ? s.a_hi() : s.b_hi(), truth);
      }
    }
    EXPECT_EQ(most, bound) << "arity " << k << ": the bound is reached";
  }
}

// A dishonest party need not follow any trajectory: it may claim anything
// at any point (copy the honest claims, or not). Every agreed digest is
// then still an honest one, so the one step the referee decides is decided
// against it.
TEST(StepBisection, ALiarLosesWhateverItClaims) {
  constexpr uint64_t kSteps = 1000;
  const std::vector<Digest> honest = trajectory(kSteps);
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint32_t k = 2 + static_cast<uint32_t>(rng() % 15);
    const int copy_percent = static_cast<int>(rng() % 101);
    auto lie = [&](uint64_t p) {
      return static_cast<int>(rng() % 100) < copy_percent ? honest[p] : state_label("lie " + std::to_string(rng()));
    };
    const bool liar_is_a = rng() % 2 == 0;
    const Digest liar_top = state_label("a final state never trained");
    StepBisection s(0, kSteps, k, honest[0], liar_is_a ? liar_top : honest[kSteps],
                    liar_is_a ? honest[kSteps] : liar_top);
    while (!s.done()) {
      const std::vector<uint64_t> p = s.points();
      std::vector<Digest> liar;
      for (uint64_t x : p) liar.push_back(lie(x));
      const std::vector<Digest> truth = claims(honest, p);
      s.play_round(liar_is_a ? liar : truth, liar_is_a ? truth : liar);
    }
    ASSERT_LE(s.rounds_played(), bisection_rounds(0, kSteps, k));
    ASSERT_EQ(s.agreed(), honest[s.lo()]);
    const Digest truth = referee_step(s.hi(), s.agreed());
    ASSERT_EQ(liar_is_a ? s.b_hi() : s.a_hi(), truth);
    ASSERT_NE(liar_is_a ? s.a_hi() : s.b_hi(), truth);
  }
}

// What answering costs a party that keeps every c-th state (docs/PROTOCOL.md
// 21.1): a point's digest needs a replay from the nearest state it has at
// or below the point (a stored checkpoint, the agreed state, or a state it
// computed in an earlier round). The figures of a 200-step run.
TEST(StepBisection, ReplayWorkPerRoundWithSparseCheckpoints) {
  constexpr uint64_t kSteps = 200, kEvery = 20;
  const std::vector<Digest> honest = trajectory(kSteps);
  for (uint32_t k : {2u, 4u, 8u}) {
    uint64_t worst_total = 0, worst_round = 0;
    for (uint64_t f = 1; f <= kSteps; ++f) {
      const std::vector<Digest> forged = trajectory(kSteps, f);
      StepBisection s(0, kSteps, k, honest[0], honest[kSteps], forged[kSteps]);
      std::vector<uint64_t> known;  // states the honest party holds
      for (uint64_t t = 0; t <= kSteps; t += kEvery) known.push_back(t);
      uint64_t total = 0;
      while (!s.done()) {
        const std::vector<uint64_t> p = s.points();
        uint64_t work = 0;
        for (uint64_t x : p) {
          const uint64_t from = *std::prev(std::upper_bound(known.begin(), known.end(), x));
          work += x - from;
          known.insert(std::upper_bound(known.begin(), known.end(), x), x);
        }
        worst_round = std::max(worst_round, work);
        total += work;
        s.play_round(claims(honest, p), claims(forged, p));
      }
      ASSERT_EQ(s.hi(), f);
      // Never more than replaying the stretch between two checkpoints per
      // point, and never the whole run.
      ASSERT_LE(total, bisection_rounds(0, kSteps, k) * (k - 1) * (kEvery - 1));
      worst_total = std::max(worst_total, total);
    }
    std::printf("[ figures  ] %llu steps, a checkpoint every %llu, arity %u: %u rounds, %u bytes claimed per party "
                "per round, replay work at most %llu steps a round and %llu in all (%.1f%% of the run)\n",
                static_cast<unsigned long long>(kSteps), static_cast<unsigned long long>(kEvery), k,
                bisection_rounds(0, kSteps, k), 32 * (k - 1), static_cast<unsigned long long>(worst_round),
                static_cast<unsigned long long>(worst_total), 100.0 * static_cast<double>(worst_total) / kSteps);
  }
}

using dispute::Party;
using dispute::TimedBisection;

// The attack: a party that is losing stops answering, so the dispute never
// ends. With deadlines it loses by default once its round's deadline
// passes; an answer after it is refused.
TEST(TimedBisection, APartyThatStopsAnsweringLosesAtTheDeadline) {
  constexpr uint64_t kSteps = 64, kForged = 41, kWindow = 5;
  const std::vector<Digest> honest = trajectory(kSteps), forged = trajectory(kSteps, kForged);
  for (int stop_after = 0; stop_after < 3; ++stop_after) {
    uint64_t now = 1000;
    TimedBisection d(0, kSteps, 2, honest[0], honest[kSteps], forged[kSteps], kWindow, now);
    for (int round = 0; round < stop_after; ++round) {
      const std::vector<uint64_t> p = d.bisection().points();
      now += 2;
      d.claim(Party::kB, claims(forged, p), now);  // either order
      EXPECT_TRUE(d.claimed(Party::kB));
      d.claim(Party::kA, claims(honest, p), now + 1);
      EXPECT_EQ(d.deadline(), now + 1 + kWindow);  // counted from the claim that completed the round
      now += 1;
    }
    // The forger stops; the honest party answers.
    const std::vector<uint64_t> p = d.bisection().points();
    d.claim(Party::kA, claims(honest, p), now + 1);
    EXPECT_TRUE(d.default_losers(d.deadline()).empty());  // the deadline is inclusive
    EXPECT_EQ(d.default_losers(d.deadline() + 1), std::vector<Party>{Party::kB});
    EXPECT_EQ(status_of([&] { d.claim(Party::kB, claims(forged, p), d.deadline() + 1); }), Status::kState);
    EXPECT_EQ(d.bisection().rounds_played(), static_cast<uint32_t>(stop_after));
  }
  // Nobody answers: both are named.
  TimedBisection quiet(0, kSteps, 2, honest[0], honest[kSteps], forged[kSteps], kWindow, 7);
  EXPECT_EQ(quiet.default_losers(7 + kWindow + 1), (std::vector<Party>{Party::kA, Party::kB}));
}

TEST(TimedBisection, PlayedOnTimeItEndsAtTheForgedStep) {
  constexpr uint64_t kSteps = 200, kWindow = 3;
  const std::vector<Digest> honest = trajectory(kSteps);
  for (uint64_t f : {1ull, 77ull, 200ull}) {
    const std::vector<Digest> forged = trajectory(kSteps, f);
    uint64_t now = 50;
    TimedBisection d(0, kSteps, 4, honest[0], forged[kSteps], honest[kSteps], kWindow, now);
    while (!d.bisection().done()) {
      const std::vector<uint64_t> p = d.bisection().points();
      now += kWindow;  // the last block of the round, each time
      ASSERT_EQ(now, d.deadline());
      d.claim(Party::kA, claims(forged, p), now);
      d.claim(Party::kB, claims(honest, p), now);
      ASSERT_TRUE(d.default_losers(now + kWindow + 1).size() == 2 || d.bisection().done());
    }
    EXPECT_EQ(d.bisection().hi(), f);
    EXPECT_TRUE(d.default_losers(now + 1000).empty());  // done: nobody defaults
    EXPECT_EQ(status_of([&] { d.claim(Party::kA, {}, now); }), Status::kState);
  }
}

TEST(TimedBisection, RefusalsChangeNothing) {
  const Digest s0 = state_label("S_0"), x = state_label("x"), y = state_label("y");
  EXPECT_EQ(status_of([&] { TimedBisection(0, 10, 2, s0, x, y, 0, 5); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { TimedBisection(0, 10, 2, s0, x, y, 2, UINT64_MAX - 1); }), Status::kOutOfRange);
  TimedBisection d(0, 10, 4, s0, x, y, 10, 100);
  EXPECT_EQ(status_of([&] { d.claim(Party::kA, {x, x}, 100); }), Status::kInvalidArgument);  // 3 points
  EXPECT_EQ(status_of([&] { d.claim(Party::kA, {x, x, x}, 99); }), Status::kInvalidArgument);  // before the start
  EXPECT_FALSE(d.claimed(Party::kA));
  d.claim(Party::kA, {x, x, x}, 104);
  EXPECT_EQ(status_of([&] { d.claim(Party::kA, {y, y, y}, 105); }), Status::kDuplicate);
  EXPECT_EQ(status_of([&] { d.claim(Party::kB, {x, x, x}, 103); }), Status::kInvalidArgument);  // time went back
  EXPECT_EQ(d.bisection().rounds_played(), 0u);
  EXPECT_EQ(d.deadline(), 110u);
  d.claim(Party::kB, {x, y, y}, 110);
  EXPECT_EQ(d.bisection().rounds_played(), 1u);
  EXPECT_EQ((std::pair{d.bisection().lo(), d.bisection().hi()}), (std::pair{uint64_t{2}, uint64_t{5}}));
  EXPECT_EQ(d.deadline(), 120u);
  EXPECT_FALSE(d.claimed(Party::kA));
}

}  // namespace
}  // namespace pot::dispute_test
