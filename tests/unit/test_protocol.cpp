// Seeds, step leaves, challenge derivation, security arithmetic and norm
// buckets: known answers, failure paths, a uniformity check of the
// challenge draw, and a Monte-Carlo run of the real derivation against the
// exact detection probability.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>

#include "challenge/challenge.h"
#include "challenge/security.h"
#include "spec/seed.h"
#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "hash/safetensors.h"
#include "test_util.h"
#include "hash/update_norm.h"
#include "witness/norm_bucket.h"
#include "witness/tolerance.h"

using namespace pot;
using pot::test::status_of;
using hash::Digest;

namespace {
Digest run_id(const std::string &s) { return hash::sha256(s.data(), s.size()); }
Bytes beacon(uint64_t i) {
  Bytes b;
  put_u64le(b, i);
  return b;
}
}  // namespace

TEST(Seed, DeterministicAndDistinctPerRun) {
  hash::Digest run, other;
  run.bytes.fill(0x11);
  other.bytes.fill(0x11);
  other.bytes[31] = 0x12;  // one bit of the run id
  EXPECT_EQ(spec::derive_seed(42, run, 7), spec::derive_seed(42, run, 7));
  std::set<uint64_t> seen;
  for (uint64_t base : {0ull, 1ull, 42ull, ~0ull})
    for (const hash::Digest *r : {&run, &other})
      for (uint64_t step = 0; step < 100; ++step) seen.insert(spec::derive_seed(base, *r, step));
  EXPECT_EQ(seen.size(), 800u);  // another run draws other seeds for every step
  // Known answer: first 8 bytes LE of SHA-256(0x0b "pot/v2/seed" u64le(42) run u64le(7)).
  hash::Sha256 h;
  const uint8_t tag_len = 11;
  h.update(&tag_len, 1).update("pot/v2/seed", 11).update_u64le(42).update(run.view()).update_u64le(7);
  EXPECT_EQ(spec::derive_seed(42, run, 7), get_u64le(h.finish().bytes.data()));
}

TEST(StepLeaf, RoundTripStrictDecodeAndHash) {
  const hash::Digest run = run_id("run");
  commit::StepLeaf l{run, 7, run_id("state"), 2.5, 0.125};
  l.stats_digest = run_id("stats");
  const Bytes b = l.encode();
  ASSERT_EQ(b.size(), commit::StepLeaf::kSize);
  ASSERT_EQ(b.size(), 132u);
  // Known layout: u8(11) "pot/v3/step" run u64le(t) state stats u64le(bits(loss)) u64le(bits(norm)).
  Bytes want = {11};
  for (char c : std::string("pot/v3/step")) want.push_back(static_cast<uint8_t>(c));
  put_bytes(want, run.view());
  put_u64le(want, 7);
  put_bytes(want, l.state_digest.view());
  put_bytes(want, l.stats_digest.view());
  put_u64le(want, std::bit_cast<uint64_t>(2.5));
  put_u64le(want, std::bit_cast<uint64_t>(0.125));
  EXPECT_EQ(b, want);
  const commit::StepLeaf back = commit::StepLeaf::decode(b);
  EXPECT_EQ(back.run_id, run);
  EXPECT_EQ(back.step, 7u);
  EXPECT_EQ(back.state_digest, l.state_digest);
  EXPECT_EQ(back.stats_digest, l.stats_digest);
  EXPECT_EQ(back.loss, 2.5);
  EXPECT_EQ(back.update_norm, 0.125);
  EXPECT_EQ(l.leaf_hash(), hash::leaf_hash(b));
  // The run is bound: the same step of another run is another leaf.
  commit::StepLeaf copied = l;
  copied.run_id = run_id("thief");
  EXPECT_NE(copied.leaf_hash(), l.leaf_hash());
  // So are the statistics: other flags are another leaf.
  commit::StepLeaf restated = l;
  restated.stats_digest = run_id("other stats");
  EXPECT_NE(restated.leaf_hash(), l.leaf_hash());
  // The loss is kept as bits: a NaN payload and -0.0 survive.
  commit::StepLeaf nan{run, 1, l.state_digest, std::bit_cast<double>(0x7ff8000000000123ull), 0};
  EXPECT_EQ(std::bit_cast<uint64_t>(commit::StepLeaf::decode(nan.encode()).loss), 0x7ff8000000000123ull);
  EXPECT_NE(commit::StepLeaf({run, 1, l.state_digest, -0.0, 0}).leaf_hash(),
            commit::StepLeaf({run, 1, l.state_digest, 0.0, 0}).leaf_hash());
  EXPECT_EQ(status_of([&] { commit::StepLeaf({run, 0, l.state_digest, 1.0, 0}).encode(); }), Status::kInvalidArgument);
  // A norm is a square root: its sign bit is never set (-0.0 included).
  EXPECT_EQ(status_of([&] { commit::StepLeaf({run, 1, l.state_digest, 1.0, -0.0}).encode(); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { commit::StepLeaf({run, 1, l.state_digest, 1.0, -1.0}).encode(); }), Status::kInvalidArgument);
  Bytes bad = b;
  bad[131] |= 0x80;  // the norm's sign bit
  EXPECT_EQ(status_of([&] { commit::StepLeaf::decode(bad); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::StepLeaf::decode(ByteView(b).first(131)); }), Status::kMalformed);
  // A version-2 leaf (pot 0.2: 100 bytes, no statistics) is refused naming its version.
  Bytes v2 = {11};
  for (char c : std::string("pot/v2/step")) v2.push_back(static_cast<uint8_t>(c));
  put_bytes(v2, run.view());
  put_u64le(v2, 7);
  put_bytes(v2, l.state_digest.view());
  put_u64le(v2, std::bit_cast<uint64_t>(2.5));
  put_u64le(v2, std::bit_cast<uint64_t>(0.125));
  ASSERT_EQ(v2.size(), 100u);
  try {
    commit::StepLeaf::decode(v2);
    ADD_FAILURE() << "a version-2 leaf decoded";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kMalformed);
    EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
  }
  bad = b;
  bad[3] ^= 1;  // tag
  EXPECT_EQ(status_of([&] { commit::StepLeaf::decode(bad); }), Status::kMalformed);
  bad = b;
  std::fill(bad.begin() + 44, bad.begin() + 52, 0);  // step 0
  EXPECT_EQ(status_of([&] { commit::StepLeaf::decode(bad); }), Status::kMalformed);
  // A protocol-1 leaf (60 bytes, no run, no norm) is refused naming its version.
  Bytes v1 = {11};
  for (char c : std::string("pot/v1/step")) v1.push_back(static_cast<uint8_t>(c));
  put_u64le(v1, 7);
  put_bytes(v1, l.state_digest.view());
  put_u64le(v1, std::bit_cast<uint64_t>(2.5));
  ASSERT_EQ(v1.size(), 60u);
  try {
    commit::StepLeaf::decode(v1);
    ADD_FAILURE() << "a version-1 leaf decoded";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kMalformed);
    EXPECT_NE(std::string(e.what()).find("protocol version 1"), std::string::npos) << e.what();
  }
}

TEST(Challenge, RangeDistinctDeterministic) {
  const Digest id = run_id("run");
  const auto a = challenge::derive_challenges(beacon(1), id, 1000, 50);
  EXPECT_EQ(a, challenge::derive_challenges(beacon(1), id, 1000, 50));
  EXPECT_NE(a, challenge::derive_challenges(beacon(2), id, 1000, 50));
  EXPECT_NE(a, challenge::derive_challenges(beacon(1), run_id("other"), 1000, 50));
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 50u);
  for (uint64_t s : a) EXPECT_TRUE(s >= 1 && s <= 1000);
  // Earlier rounds do not depend on how many rounds are drawn.
  const auto b = challenge::derive_challenges(beacon(1), id, 1000, 10);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  // k = n draws every step once.
  auto all = challenge::derive_challenges(beacon(3), id, 64, 64);
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(all[i], i + 1);
  EXPECT_EQ(challenge::derive_challenges(beacon(1), id, 1, 1), std::vector<uint64_t>{1});
  EXPECT_EQ(challenge::derive_challenges(beacon(1), id, UINT64_MAX, 3).size(), 3u);
}

TEST(Challenge, Errors) {
  const Digest id = run_id("run");
  EXPECT_EQ(status_of([&] { challenge::derive_challenges(beacon(1), id, 0, 0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::derive_challenges(beacon(1), id, 5, 6); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::derive_challenges({}, id, 5, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::derive_challenges(Bytes(1025), id, 5, 1); }), Status::kLimit);
  EXPECT_EQ(status_of([&] { challenge::derive_challenges(beacon(1), id, 1u << 20, 65537); }), Status::kLimit);
}

TEST(Challenge, FirstRoundIsUniform) {
  // Chi-square over 7 outcomes for 70,000 fixed beacons (deterministic: the
  // statistic is a fixed number). 22.46 is the 0.999 quantile for 6 dof.
  const Digest id = run_id("uniformity");
  std::vector<double> count(7, 0);
  const int draws = 70000;
  for (int i = 0; i < draws; ++i) count[challenge::derive_challenges(beacon(i), id, 7, 1)[0] - 1]++;
  double chi2 = 0;
  for (double c : count) chi2 += (c - draws / 7.0) * (c - draws / 7.0) / (draws / 7.0);
  EXPECT_LT(chi2, 22.46) << "chi-square " << chi2;
}

TEST(Security, ExactSmallCasesAndBounds) {
  // n = 10, m = 2, k = 3: 1 - C(8,3)/C(10,3) = 1 - 56/120.
  EXPECT_NEAR(challenge::detection_probability(10, 2, 3), 1 - 56.0 / 120.0, 1e-15);
  EXPECT_EQ(challenge::detection_probability(10, 0, 5), 0.0);
  EXPECT_EQ(challenge::detection_probability(10, 2, 9), 1.0);  // only 8 honest steps
  EXPECT_EQ(challenge::detection_probability(10, 10, 1), 1.0);
  // Distinct draws detect at least as well as independent ones.
  for (uint64_t k : {1u, 5u, 50u}) EXPECT_GE(challenge::detection_probability(1000, 10, k), 1 - std::pow(0.99, k) - 1e-12);
  for (double target : {0.5, 0.9, 0.99, 0.999}) {
    const uint64_t k = challenge::challenges_needed(10000, 100, target);
    EXPECT_GE(challenge::detection_probability(10000, 100, k), target);
    EXPECT_LT(challenge::detection_probability(10000, 100, k - 1), target);
  }
  EXPECT_EQ(challenge::challenges_needed(10000, 100, 0.99), 448u);  // exact rationals (Python math.comb) agree
  EXPECT_EQ(status_of([&] { challenge::detection_probability(0, 0, 0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::detection_probability(10, 11, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::detection_probability(10, 1, 11); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::challenges_needed(10, 0, 0.9); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::challenges_needed(10, 1, 1.0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::challenges_needed(10, 1, std::nan("")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { challenge::challenges_needed(uint64_t{1} << 40, 1, 0.99); }), Status::kLimit);
  EXPECT_NEAR(challenge::deterrence(1000, 10, 2, 3), 1000 * (1 - 56.0 / 120.0), 1e-9);
}

TEST(Security, MonteCarloOverTheRealChallengeDerivation) {
  // n = 100 steps of which m = 5 forged (steps 3, 17, 42, 77, 99), k = 10
  // challenges, 20,000 beacons: the hit rate matches 1 - C(95,10)/C(100,10).
  const std::set<uint64_t> forged = {3, 17, 42, 77, 99};
  const Digest id = run_id("monte carlo");
  const int trials = 20000;
  int hits = 0;
  for (int i = 0; i < trials; ++i) {
    for (uint64_t s : challenge::derive_challenges(beacon(1'000'000 + i), id, 100, 10))
      if (forged.count(s)) {
        ++hits;
        break;
      }
  }
  const double p = challenge::detection_probability(100, 5, 10);
  const double sigma = std::sqrt(p * (1 - p) / trials);
  EXPECT_NEAR(static_cast<double>(hits) / trials, p, 4 * sigma) << "exact " << p;
}

TEST(NormBucket, QuantisationSentinelsAndMatching) {
  EXPECT_EQ(witness::norm_bucket(1.0, 16), 0);
  EXPECT_EQ(witness::norm_bucket(2.0, 16), 16);
  EXPECT_EQ(witness::norm_bucket(0.5, 16), -16);
  EXPECT_EQ(witness::norm_bucket(3.0, 1), 1);
  EXPECT_EQ(witness::norm_bucket(1e-3, 8), static_cast<int64_t>(std::floor(8 * std::log2(1e-3))));
  EXPECT_EQ(witness::norm_bucket(0.0, 8), witness::kBucketZero);
  EXPECT_EQ(witness::norm_bucket(-0.0, 8), witness::kBucketZero);
  EXPECT_EQ(witness::norm_bucket(std::nan(""), 8), witness::kBucketNonFinite);
  EXPECT_EQ(witness::norm_bucket(INFINITY, 8), witness::kBucketNonFinite);
  EXPECT_EQ(witness::norm_bucket(4.9e-324, 1), -1074);
  EXPECT_EQ(status_of([] { witness::norm_bucket(-1.0, 8); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { witness::norm_bucket(1.0, 0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { witness::norm_bucket(1.0, 65537); }), Status::kInvalidArgument);
  EXPECT_TRUE(witness::buckets_match(5, 5));
  EXPECT_TRUE(witness::buckets_match(5, 6));
  EXPECT_TRUE(witness::buckets_match(-3, -4));
  EXPECT_FALSE(witness::buckets_match(5, 7));
  EXPECT_TRUE(witness::buckets_match(witness::kBucketZero, witness::kBucketZero));
  EXPECT_FALSE(witness::buckets_match(witness::kBucketZero, INT64_MIN + 1));
  EXPECT_FALSE(witness::buckets_match(witness::kBucketNonFinite, INT64_MAX - 1));
  // A value just across an edge lands in the neighbouring bucket and matches.
  const double edge = std::exp2(5.0 / 16);
  EXPECT_TRUE(witness::buckets_match(witness::norm_bucket(std::nextafter(edge, 0), 16),
                                     witness::norm_bucket(std::nextafter(edge, 2), 16)));
}

// The cross-architecture comparison of the update (docs/PROTOCOL.md 21.5,
// check 29): its distances, computed on states as a verifier holds them,
// and the rule that judges them.
TEST(NormBucket, UpdateAgreementAndItsTolerances) {
  using hash::DType;
  const auto f32 = test::f32_bytes;
  std::vector<float> big(64, 1.0f);
  const Bytes w0 = f32(big), b0 = f32({0.0f, 0.0f});
  auto state = [&](float step_w, float step_b, std::vector<Bytes> &keep) {
    std::vector<float> w = big;
    for (float &x : w) x += step_w;
    keep.push_back(f32(w));
    keep.push_back(f32({step_b, -step_b}));
    return std::vector<hash::StTensor>{{{"param/b", DType::kF32, {2}}, keep[keep.size() - 1]},
                                       {{"param/w", DType::kF32, {64}}, keep[keep.size() - 2]}};
  };
  std::vector<Bytes> keep;
  keep.reserve(16);
  const std::vector<hash::StTensor> pre = {{{"param/b", DType::kF32, {2}}, b0}, {{"param/w", DType::kF32, {64}}, w0}};
  const auto honest = state(0.5f, 1.0f, keep);
  // The same update: 0 everywhere.
  auto same = hash::update_agreement(pre, honest, state(0.5f, 1.0f, keep), "param/", 64);
  EXPECT_EQ(same.relative, 0.0);
  EXPECT_EQ(same.worst_relative, 0.0);
  EXPECT_EQ(same.worst_tensor, "param/w");  // the only tensor of 64 elements
  EXPECT_FALSE(same.low_precision);
  EXPECT_EQ(witness::update_disagrees(same, 3), std::nullopt);
  // The opposite update: 2; a zero one: 1; both fail, naming the step.
  const auto opposite = hash::update_agreement(pre, honest, state(-0.5f, -1.0f, keep), "param/", 64);
  EXPECT_DOUBLE_EQ(opposite.relative, 2.0);
  const auto frozen = hash::update_agreement(pre, honest, pre, "param/", 64);
  EXPECT_DOUBLE_EQ(frozen.relative, 1.0);
  EXPECT_DOUBLE_EQ(frozen.error, std::sqrt(64 * 0.25 + 2));
  ASSERT_TRUE(witness::update_disagrees(frozen, 3));
  EXPECT_NE(witness::update_disagrees(frozen, 3)->find("the served S_3's update differs from the replayed one by 1 "
                                                       "of its size (tolerance 0.5)"),
            std::string::npos);
  // One tensor frozen (the big one keeps its update, the small one not):
  // within the whole-update tolerance, the per-tensor one names w when w
  // is the frozen one.
  const auto small_frozen = hash::update_agreement(pre, honest, state(0.5f, 0.0f, keep), "param/", 64);
  EXPECT_LT(small_frozen.relative, 0.5);
  EXPECT_EQ(small_frozen.worst_relative, 0.0);  // b is under 64 elements
  EXPECT_EQ(witness::update_disagrees(small_frozen, 3), std::nullopt);
  const auto w_frozen = hash::update_agreement(pre, state(0.0f, 10.0f, keep), state(0.5f, 10.0f, keep), "param/", 64);
  EXPECT_LT(w_frozen.relative, 0.5);
  EXPECT_DOUBLE_EQ(w_frozen.worst_relative, 1.0);
  EXPECT_EQ(*witness::update_disagrees(w_frozen, 4),
            "the served S_4's update of 'param/w' (64 elements) differs from the replayed one by 1 of its size "
            "(tolerance 0.5 per tensor)");
  // 16-bit parameters: no per-tensor figure, the looser whole tolerance.
  const Bytes h0 = {0x80, 0x3f, 0x80, 0x3f}, h1 = {0x80, 0x3f, 0x00, 0x40}, h2 = {0x00, 0x40, 0x80, 0x3f};
  const auto bf = hash::update_agreement({{{"param/h", DType::kBF16, {2}}, h0}}, {{{"param/h", DType::kBF16, {2}}, h1}},
                                         {{{"param/h", DType::kBF16, {2}}, h2}}, "param/", 1);
  EXPECT_TRUE(bf.low_precision);
  EXPECT_DOUBLE_EQ(bf.relative, std::sqrt(2.0));
  EXPECT_TRUE(bf.worst_tensor.empty());
  ASSERT_TRUE(witness::update_disagrees(bf, 5));
  EXPECT_NE(witness::update_disagrees(bf, 5)->find("(tolerance 0.8)"), std::string::npos);
  // States that do not pair.
  EXPECT_EQ(status_of([&] { hash::update_agreement(pre, honest, {{{"param/w", DType::kF32, {64}}, w0}}, "param/", 1); }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { hash::update_agreement(pre, pre, pre, "grad/", 1); }), Status::kInvalidArgument);
  // The loss: relative, with a floor.
  EXPECT_EQ(witness::loss_error(2.0, 2.0), 0.0);
  EXPECT_NEAR(witness::loss_error(2.0, 2.01), 0.01 / 2.01, 1e-15);
  EXPECT_DOUBLE_EQ(witness::loss_error(0.0, 1e-6), 1e-6 / 1e-3);
  EXPECT_EQ(witness::loss_disagrees(2.0, 2.01, 7), std::nullopt);
  ASSERT_TRUE(witness::loss_disagrees(2.0, 1.5, 7));
  EXPECT_NE(witness::loss_disagrees(2.0, 1.5, 7)->find("step 7 replays to the loss 1.5, leaf 7 commits to 2"),
            std::string::npos);
}

TEST(NormBucket, UpdateNormOverTwoStates) {
  test::TempDir dir;
  const float w0[3] = {1.0f, 2.0f, -3.0f}, w1[3] = {1.5f, 2.0f, -2.0f};
  const double v0[2] = {0.25, 8.0}, v1[2] = {0.25, 10.0};
  const uint16_t h0[2] = {0x3c00, 0x4000}, h1[2] = {0x3e00, 0x4000};  // f16 1.0,2.0 -> 1.5,2.0
  const uint16_t b0[1] = {0x3f80}, b1[1] = {0x4000};                   // bf16 1.0 -> 2.0
  const int32_t i0[1] = {1}, i1[1] = {100};                            // not floating: ignored
  auto bytes = [](const void *p, size_t n) { return ByteView(static_cast<const uint8_t *>(p), n); };
  auto write = [&](const std::string &name, const float *w, const double *v, const uint16_t *h, const uint16_t *b,
                   const int32_t *i) {
    hash::write_safetensors(dir.file(name),
                            {{{"model.w", hash::DType::kF32, {3}}, bytes(w, 12)},
                             {{"model.v", hash::DType::kF64, {2}}, bytes(v, 16)},
                             {{"model.h", hash::DType::kF16, {2}}, bytes(h, 4)},
                             {{"model.b", hash::DType::kBF16, {1}}, bytes(b, 2)},
                             {{"optim.step", hash::DType::kI32, {1}}, bytes(i, 4)}},
                            {});
  };
  write("pre", w0, v0, h0, b0, i0);
  write("post", w1, v1, h1, b1, i1);
  auto pre = hash::SafetensorsFile::open(dir.file("pre"));
  auto post = hash::SafetensorsFile::open(dir.file("post"));
  // Differences: w 0.5, 0, 1; v 0, 2; h 0.5, 0; b 1.
  EXPECT_DOUBLE_EQ(hash::update_norm(*pre, *post, ""), std::sqrt(0.25 + 1 + 4 + 0.25 + 1));
  EXPECT_DOUBLE_EQ(hash::update_norm(*pre, *post, "model.w"), std::sqrt(1.25));
  EXPECT_EQ(hash::update_norm(*pre, *pre, ""), 0.0);
  EXPECT_EQ(status_of([&] { hash::update_norm(*pre, *post, "nothing."); }), Status::kInvalidArgument);
  hash::write_safetensors(dir.file("other"), {{{"model.w", hash::DType::kF32, {3}}, bytes(w1, 12)}}, {});
  auto other = hash::SafetensorsFile::open(dir.file("other"));
  EXPECT_EQ(status_of([&] { hash::update_norm(*pre, *other, "model."); }), Status::kInvalidArgument);
  EXPECT_DOUBLE_EQ(hash::update_norm(*pre, *other, "model.w"), std::sqrt(1.25));
  hash::write_safetensors(dir.file("reshaped"), {{{"model.w", hash::DType::kF32, {1, 3}}, bytes(w1, 12)}}, {});
  auto reshaped = hash::SafetensorsFile::open(dir.file("reshaped"));
  EXPECT_EQ(status_of([&] { hash::update_norm(*pre, *reshaped, "model.w"); }), Status::kInvalidArgument);
}
