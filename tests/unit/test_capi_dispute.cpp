// The step bisection through the shared library (docs/PROTOCOL.md 22.1):
// the points' capacity protocol, a dispute played to the forged step, and
// the error paths.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "pot.h"

namespace {

pot_digest digest_of(const std::string &s) {
  pot_digest d{};
  EXPECT_EQ(pot_sha256(&d, reinterpret_cast<const uint8_t *>(s.data()), s.size(), nullptr), POT_OK);
  return d;
}

bool same(const pot_digest &a, const pot_digest &b) { return std::memcmp(a.bytes, b.bytes, POT_DIGEST_SIZE) == 0; }

pot_status status_of(pot_status s, pot_error *err) {
  pot_error_free(err);
  return s;
}

TEST(CApiDispute, PointsAndRounds) {
  size_t count = 0;
  ASSERT_EQ(pot_bisection_points(nullptr, &count, 0, 200, 4, nullptr), POT_OK);
  EXPECT_EQ(count, 3u);
  uint64_t points[POT_BISECTION_MAX_POINTS];
  count = 2;  // too small: refused, the number needed returned
  pot_error *err = nullptr;
  EXPECT_EQ(pot_bisection_points(points, &count, 0, 200, 4, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("capacity of 2"), std::string::npos);
  pot_error_free(err);
  EXPECT_EQ(count, 3u);
  count = POT_BISECTION_MAX_POINTS;
  ASSERT_EQ(pot_bisection_points(points, &count, 0, 200, 4, nullptr), POT_OK);
  EXPECT_EQ(std::vector<uint64_t>(points, points + count), (std::vector<uint64_t>{50, 100, 150}));
  count = POT_BISECTION_MAX_POINTS;
  ASSERT_EQ(pot_bisection_points(points, &count, 0, UINT64_MAX, POT_BISECTION_MAX_ARITY, nullptr), POT_OK);
  EXPECT_EQ(count, size_t{POT_BISECTION_MAX_POINTS});
  uint32_t rounds = 0;
  ASSERT_EQ(pot_bisection_rounds(&rounds, 0, 200, 2, nullptr), POT_OK);
  EXPECT_EQ(rounds, 8u);
  err = nullptr;
  EXPECT_EQ(status_of(pot_bisection_points(points, &count, 5, 5, 2, &err), err), POT_E_INVALID_ARGUMENT);
  err = nullptr;
  EXPECT_EQ(status_of(pot_bisection_rounds(&rounds, 0, 5, 1, &err), err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_rounds(nullptr, 0, 5, 2, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_points(points, nullptr, 0, 5, 2, nullptr), POT_E_INVALID_ARGUMENT);
}

TEST(CApiDispute, ADisputeEndsAtTheForgedStep) {
  constexpr uint64_t kSteps = 50, kForged = 37;
  // S_t of an honest run, and of one forged at kForged (its later states
  // differ too).
  std::vector<pot_digest> honest{digest_of("S_0")}, forged{digest_of("S_0")};
  for (uint64_t t = 1; t <= kSteps; ++t) {
    honest.push_back(digest_of("S_" + std::to_string(t)));
    forged.push_back(t < kForged ? honest.back() : digest_of("forged S_" + std::to_string(t)));
  }
  pot_bisection *b = nullptr;
  ASSERT_EQ(pot_bisection_new(&b, 0, kSteps, 3, &honest[0], &forged[kSteps], &honest[kSteps], nullptr), POT_OK);
  pot_bisection_info info = POT_BISECTION_INFO_INIT;
  for (;;) {
    ASSERT_EQ(pot_bisection_info_get(&info, b, nullptr), POT_OK);
    if (info.done) break;
    uint64_t points[POT_BISECTION_MAX_POINTS];
    size_t count = POT_BISECTION_MAX_POINTS;
    ASSERT_EQ(pot_bisection_points(points, &count, info.lo, info.hi, info.arity, nullptr), POT_OK);
    std::vector<pot_digest> a, h;
    for (size_t i = 0; i < count; ++i) {
      a.push_back(forged[points[i]]);
      h.push_back(honest[points[i]]);
    }
    // A claim list of the wrong length changes nothing.
    pot_error *err = nullptr;
    a.push_back(a.back());
    h.push_back(h.back());
    ASSERT_EQ(status_of(pot_bisection_play_round(b, a.data(), h.data(), count + 1, &err), err),
              POT_E_INVALID_ARGUMENT);
    pot_bisection_info same_info = POT_BISECTION_INFO_INIT;
    ASSERT_EQ(pot_bisection_info_get(&same_info, b, nullptr), POT_OK);
    ASSERT_EQ(same_info.rounds_played, info.rounds_played);
    ASSERT_EQ(pot_bisection_play_round(b, a.data(), h.data(), count, nullptr), POT_OK);  // the first count
  }
  EXPECT_EQ(info.hi, kForged);
  EXPECT_EQ(info.lo, kForged - 1);
  EXPECT_TRUE(same(info.agreed, honest[kForged - 1]));
  EXPECT_TRUE(same(info.a_hi, forged[kForged]));
  EXPECT_TRUE(same(info.b_hi, honest[kForged]));
  uint32_t bound = 0;
  ASSERT_EQ(pot_bisection_rounds(&bound, 0, kSteps, 3, nullptr), POT_OK);
  EXPECT_LE(info.rounds_played, bound);
  pot_error *err = nullptr;
  EXPECT_EQ(pot_bisection_play_round(b, nullptr, nullptr, 0, &err), POT_E_STATE);
  EXPECT_NE(std::string(pot_error_message(err)).find("done at step 37"), std::string::npos);
  pot_error_free(err);
  pot_bisection_free(b);
  pot_bisection_free(nullptr);
}

TEST(CApiDispute, BadArgumentsAreRefused) {
  const pot_digest s0 = digest_of("S_0"), x = digest_of("x"), y = digest_of("y");
  pot_bisection *b = nullptr;
  EXPECT_EQ(pot_bisection_new(&b, 0, 10, 2, &s0, &x, &x, nullptr), POT_E_INVALID_ARGUMENT);  // nothing disputed
  EXPECT_EQ(pot_bisection_new(&b, 10, 10, 2, &s0, &x, &y, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_new(&b, 0, 10, 257, &s0, &x, &y, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_new(&b, 0, 10, 2, nullptr, &x, &y, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_new(nullptr, 0, 10, 2, &s0, &x, &y, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(b, nullptr);
  ASSERT_EQ(pot_bisection_new(&b, 0, 10, 2, &s0, &x, &y, nullptr), POT_OK);
  EXPECT_EQ(pot_bisection_play_round(b, nullptr, &x, 1, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_play_round(nullptr, &x, &x, 1, nullptr), POT_E_INVALID_ARGUMENT);
  std::vector<pot_digest> many(POT_BISECTION_MAX_POINTS + 1, x);
  EXPECT_EQ(pot_bisection_play_round(b, many.data(), many.data(), many.size(), nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_bisection_info_get(nullptr, b, nullptr), POT_E_INVALID_ARGUMENT);
  pot_bisection_info info = POT_BISECTION_INFO_INIT;
  EXPECT_EQ(pot_bisection_info_get(&info, nullptr, nullptr), POT_E_INVALID_ARGUMENT);
  pot_bisection_free(b);
}

}  // namespace
