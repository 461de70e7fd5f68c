// Witness commitments, reveals and the cluster verdict.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

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

namespace {
witness::Statement statement() {
  witness::Statement s;
  s.run_id = d("run");
  s.step = 7;
  s.challenge_id = 3;
  s.mode = witness::Mode::kBitwise;
  s.finding.environment = {"1.13.0", 1, "cpu-x86_64/aten:avx2/onednn:avx2"};
  s.finding.replayed_state = d("replayed");
  s.finding.bucket = 42;
  return s;
}
}  // namespace

TEST(Witness, CommitRevealBindsChallengeEnvironmentFindingSaltAndIdentity) {
  const witness::Statement v = statement();
  const Bytes salt = witness::fresh_salt();
  ASSERT_EQ(salt.size(), 32u);
  EXPECT_NE(salt, witness::fresh_salt());
  const Digest c = witness::witness_commitment(v, salt, id("alice"));
  EXPECT_NO_THROW(witness::verify_reveal(c, v, salt, id("alice")));
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, v, salt, id("mallory")); }), Status::kProofMismatch);
  Bytes other_salt = salt;
  other_salt[0] ^= 1;
  EXPECT_EQ(status_of([&] { witness::verify_reveal(c, v, other_salt, id("alice")); }), Status::kProofMismatch);
  // Every field of the statement is bound: a commitment made for one
  // challenge, mode, environment or finding opens for no other.
  const std::vector<std::function<void(witness::Statement &)>> changes = {
      [](auto &s) { s.run_id = d("other run"); },
      [](auto &s) { s.step = 8; },
      [](auto &s) { s.challenge_id = 4; },
      [](auto &s) { s.mode = witness::Mode::kNormBucket; },
      [](auto &s) { s.finding.environment.framework_version = "1.13.1"; },
      [](auto &s) { s.finding.environment.intra_op_threads = 2; },
      [](auto &s) { s.finding.environment.hardware_class = "cpu-x86_64/aten:default/onednn:avx2"; },
      [](auto &s) { s.finding.replayed_state = d("other"); },
      [](auto &s) { s.finding.bucket = 43; },
      [](auto &s) { s.finding.kind = witness::Kind::kUnavailable; },
      [](auto &s) {
        s.finding.kind = witness::Kind::kInvalidOpening;
        s.finding.check = commit::OpeningCheck::kSampleProof;
      },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    witness::Statement w = v;
    changes[i](w);
    EXPECT_EQ(status_of([&] { witness::verify_reveal(c, w, salt, id("alice")); }), Status::kProofMismatch) << i;
  }
  // The fields a kind does not use are not bound: they are not part of it.
  witness::Statement u = v;
  u.finding.kind = witness::Kind::kUnavailable;
  witness::Statement u2 = u;
  u2.finding.replayed_state = d("ignored");
  EXPECT_EQ(witness::witness_commitment(u, salt, id("a")), witness::witness_commitment(u2, salt, id("a")));
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, Bytes(15), id("a")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, Bytes(65), id("a")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, salt, Bytes{}); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { witness::witness_commitment(v, salt, Bytes(257)); }), Status::kInvalidArgument);
}

TEST(Witness, StatementsAreValidatedAndReadStrictly) {
  auto refused = [](const std::function<void(witness::Statement &)> &change) {
    witness::Statement s = statement();
    change(s);
    return status_of([&] { witness::witness_commitment(s, Bytes(32), id("a")); });
  };
  EXPECT_EQ(refused([](auto &s) { s.step = 0; }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.mode = static_cast<witness::Mode>(3); }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.kind = static_cast<witness::Kind>(4); }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.framework_version = ""; }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.framework_version = std::string(65, '1'); }),
            Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.intra_op_threads = 0; }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.intra_op_threads = 1025; }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.hardware_class = ""; }), Status::kInvalidArgument);
  EXPECT_EQ(refused([](auto &s) { s.finding.environment.hardware_class = std::string(257, 'x'); }),
            Status::kInvalidArgument);
  for (uint32_t check : {0u, 21u, 23u, 33u}) {
    EXPECT_EQ(refused([&](auto &s) {
                s.finding.kind = witness::Kind::kInvalidOpening;
                s.finding.check = static_cast<commit::OpeningCheck>(check);
              }),
              Status::kInvalidArgument)
        << check;
  }

  // JSON: each kind round-trips; unknown, missing or mistyped keys are
  // refused, naming them.
  witness::Statement unavailable = statement(), invalid = statement();
  unavailable.finding.kind = witness::Kind::kUnavailable;
  unavailable.finding.replayed_state = {};
  unavailable.finding.bucket = 0;
  invalid.finding.kind = witness::Kind::kInvalidOpening;
  invalid.finding.check = commit::OpeningCheck::kSampleProof;
  invalid.finding.replayed_state = {};
  invalid.finding.bucket = 0;
  for (const witness::Statement &s : {statement(), unavailable, invalid})
    EXPECT_EQ(witness::Statement::from_json(s.to_json()), s);
  EXPECT_EQ(invalid.to_json()["check"], "sample_proof");
  EXPECT_EQ(unavailable.to_json().size(), 6u);
  auto message = [](nlohmann::json j) {
    try {
      witness::Statement::from_json(j);
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  nlohmann::json j = unavailable.to_json();
  j["bucket"] = 1;
  EXPECT_NE(message(j).find("unknown key 'bucket'"), std::string::npos) << message(j);
  j = statement().to_json();
  j.erase("bucket");
  EXPECT_NE(message(j).find("missing key 'bucket'"), std::string::npos) << message(j);
  j = invalid.to_json();
  j["check"] = "replayed_state";
  EXPECT_NE(message(j).find("state kind 'replayed'"), std::string::npos) << message(j);
  j["check"] = "ok";
  EXPECT_NE(message(j).find("'ok' is not an opening check name"), std::string::npos) << message(j);
  j = statement().to_json();
  j["mode"] = "fast";
  EXPECT_NE(message(j).find("witness statement.mode"), std::string::npos) << message(j);
  j = statement().to_json();
  j["kind"] = "abstained";
  EXPECT_NE(message(j).find("witness statement.kind"), std::string::npos) << message(j);
  j = statement().to_json();
  j["environment"]["threads"] = 1;
  EXPECT_NE(message(j).find("unknown key 'threads'"), std::string::npos) << message(j);
  j = statement().to_json();
  j["bucket"] = "1";
  EXPECT_NE(message(j).find("must be an integer"), std::string::npos) << message(j);
}

TEST(Witness, AnEnvironmentJudgesOnlyTheStepsItCanReplay) {
  const spec::ExecutionSpec spec = [] {
    spec::ExecutionSpec s;
    s.framework_version = "1.13.1";
    s.intra_op_threads = 1;
    s.hardware_class = "cpu-x86_64/aten:avx2/onednn:avx2";
    return s;
  }();
  const witness::Environment ok{"1.13.0", 1, spec.hardware_class};
  using witness::Mode;
  EXPECT_EQ(witness::environment_mismatch(ok, spec, Mode::kBitwise), std::nullopt);
  EXPECT_TRUE(witness::same_framework_release("1.13", "1.13.1"));
  EXPECT_FALSE(witness::same_framework_release("1.1", "1.13"));
  EXPECT_FALSE(witness::same_framework_release("2.1.0", "1.13.1"));
  witness::Environment e = ok;
  e.framework_version = "2.1.0";
  EXPECT_NE(witness::environment_mismatch(e, spec, Mode::kNormBucket), std::nullopt);
  e = ok;
  e.intra_op_threads = 2;
  EXPECT_EQ(*witness::environment_mismatch(e, spec, Mode::kBitwise),
            "bitwise on 2 intra-op threads, the spec's are 1");
  EXPECT_EQ(witness::environment_mismatch(e, spec, Mode::kNormBucket), std::nullopt);
  e = ok;
  e.hardware_class = "cpu-x86_64/aten:default/onednn:avx2";
  EXPECT_NE(witness::environment_mismatch(e, spec, Mode::kBitwise), std::nullopt);
  EXPECT_EQ(witness::environment_mismatch(e, spec, Mode::kNormBucket), std::nullopt);
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
  // Per tensor: a trace elsewhere does not excuse a tensor the gradient
  // reached and that kept none (the replay counts those of at least
  // kMinTracedTensorElements elements whose group trains).
  t.learning_rate = 1e-3;
  t.moved_elements = 100;
  t.gradient_elements = 40;
  t.optim_gradient_elements = 80;
  EXPECT_FALSE(witness::gradient_ignored(t, 7));
  t.untraced_tensors = 2;
  t.first_untraced = "param/blocks.0.weight";
  t.first_untraced_elements = 4096;
  why = witness::gradient_ignored(t, 7);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "a zero gradient gives the same 'param/blocks.0.weight' (4096 elements) in S_7: its gradient of "
                  "step 7 is not zero but changed none of its elements or its optimizer state (2 such tensors of at "
                  "least 64 elements; is their optimizer state saturated?)");
}
