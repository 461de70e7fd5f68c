// Witness commitments, reveals and the cluster verdict.
#include <gtest/gtest.h>

#include <cstring>

#include "core_test_util.h"
#include "witness/gradient_trace.h"
#include "witness/norm_bucket.h"
#include "witness/witness.h"

using namespace pot;
using pot::test::status_of;
using hash::Digest;

namespace {
Digest d(const char *s) { return hash::sha256(s, std::strlen(s)); }
Bytes id(const char *s) { return Bytes(s, s + std::strlen(s)); }
witness::Revealed rev(const char *who, const char *state, int64_t bucket = 0) {
  return {id(who), d(state), bucket};
}
}  // namespace

TEST(Witness, CommitRevealBindsValueSaltAndIdentity) {
  const witness::WitnessValue v{d("run"), 7, d("replayed"), 42};
  const Bytes salt = witness::fresh_salt();
  ASSERT_EQ(salt.size(), 32u);
  EXPECT_NE(salt, witness::fresh_salt());
  const Digest c = witness::witness_commitment(v, salt, id("alice"));
  EXPECT_NO_THROW(witness::verify_reveal(c, v, salt, id("alice")));
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, v, salt, id("mallory")); }), Status::kProofMismatch);
  Bytes other_salt = salt;
  other_salt[0] ^= 1;
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, v, other_salt, id("alice")); }), Status::kProofMismatch);
  witness::WitnessValue w = v;
  w.bucket = 43;
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, w, salt, id("alice")); }), Status::kProofMismatch);
  w = v;
  w.step = 8;
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, w, salt, id("alice")); }), Status::kProofMismatch);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, Bytes(15), id("a")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, Bytes(65), id("a")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, salt, Bytes{}); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment({d("run"), 0, d("x"), 0}, salt, id("a")); }),
            Status::kInvalidArgument);
}

TEST(Witness, BitwiseVerdictFromTheLargestCluster) {
  using witness::Verdict;
  const Digest committed = d("honest");
  auto decide = [&](std::vector<witness::Revealed> r, size_t quorum = 2) {
    return witness::decide(r, witness::Mode::kBitwise, committed, std::nullopt, quorum);
  };
  EXPECT_EQ(decide({rev("a", "honest"), rev("b", "honest"), rev("c", "random")}).verdict, Verdict::kPass);
  const auto fail = decide({rev("a", "forged"), rev("b", "forged"), rev("c", "honest")});
  EXPECT_EQ(fail.verdict, Verdict::kFail);
  EXPECT_EQ(fail.cluster_size, 2u);
  EXPECT_EQ(fail.cluster_state, d("forged"));
  // A lone verifier with a random hash lands outside the cluster.
  EXPECT_EQ(decide({rev("a", "honest"), rev("b", "honest"), rev("c", "honest"), rev("z", "noise")}).verdict,
            Verdict::kPass);
  // Ties and too few reveals give INCONCLUSIVE, never a guess.
  EXPECT_EQ(decide({rev("a", "honest"), rev("b", "forged")}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(decide({rev("a", "honest")}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(decide({}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(status_of([&] { decide({rev("a", "honest"), rev("a", "honest")}); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { decide({rev("a", "honest")}, 0); }), Status::kInvalidArgument);
}

TEST(Witness, NormBucketVerdictAllowsAdjacentBuckets) {
  using witness::Verdict;
  auto decide = [&](std::vector<witness::Revealed> r, int64_t declared) {
    return witness::decide(r, witness::Mode::kNormBucket, Digest{}, declared, 2).verdict;
  };
  EXPECT_EQ(decide({rev("a", "x", 100), rev("b", "y", 100), rev("c", "z", 101)}, 101), Verdict::kPass);
  EXPECT_EQ(decide({rev("a", "x", 100), rev("b", "y", 100)}, 99), Verdict::kPass);
  EXPECT_EQ(decide({rev("a", "x", 100), rev("b", "y", 100)}, 102), Verdict::kFail);
  EXPECT_EQ(decide({rev("a", "x", witness::kBucketZero), rev("b", "y", witness::kBucketZero)}, INT64_MIN + 1),
            Verdict::kFail);
  EXPECT_EQ(status_of([&] {
              witness::decide({rev("a", "x", 1)}, witness::Mode::kNormBucket, Digest{}, std::nullopt, 1);
            }),
            Status::kInvalidArgument);
}

// Check 27's rule, branch by branch (the replay's measurements of honest and
// saturated runs are in tests/replay and bindings/python/tests/test_attacks.py).
TEST(GradientTrace, TheGradientMustLeaveATraceWhenTheStepChangedSomething) {
  witness::GradientTrace t;
  t.learning_rate = 1e-3;
  t.param_elements = 100;
  // Saturated state: the parameters moved, a zero gradient moves them the same.
  t.moved_elements = 100;
  t.optim_elements = 200;
  auto why = witness::gradient_ignored(t, 7);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("a zero gradient gives the same S_7"), std::string::npos) << *why;
  EXPECT_NE(why->find("100 parameter elements (100 moved)"), std::string::npos) << *why;
  // One element of the gradient in the parameters, or in the optimizer
  // state (parameters moved by momentum alone late in a schedule), passes.
  t.gradient_elements = 1;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
  t.gradient_elements = 0;
  t.optim_gradient_elements = 1;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
  // Nothing moved and the moments ignore the gradient: still a FAIL.
  t.optim_gradient_elements = 0;
  t.moved_elements = 0;
  EXPECT_TRUE(witness::gradient_ignored(t, 7));
  // Plain SGD (no state) at a rate too small to move a parameter: nowhere
  // for the gradient to go, not a FAIL.
  t.optim_elements = 0;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
  t.moved_elements = 3;  // ... but parameters that moved without it are
  EXPECT_TRUE(witness::gradient_ignored(t, 7));
  // A rate of 0 trains nothing: not applicable.
  t.learning_rate = 0;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
  t.learning_rate = -0.0;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
}
