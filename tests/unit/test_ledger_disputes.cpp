// The ledger's disputes (docs/ledger.md 2.12-2.14): the step bisection
// played as ledger calls with a deadline per round, the miner's claims bound
// to its committed leaves, the end in the outcome log; every refusal leaves
// the state unchanged; the state round-trips mid-dispute; the records
// (docs/PROTOCOL.md 20.2) decode strictly.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <tuple>
#include <string>

#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "dispute/bisection.h"
#include "game/ledger.h"
#include "hash/rfc6962.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "pot/v2/ledger.pb.h"
#include "task_test_util.h"

using namespace pot;
using game::DisputeEnd;
using game::DisputeRecord;
using game::LeafClaim;
using game::Ledger;
using game::LedgerConfig;
using hash::Digest;
using pot::test::status_of;

// Named, not anonymous: the unity build may put test_ledger.cpp's helpers of
// the same names in this file; lookup finds these first.
namespace ledger_dispute_test {

Digest d(const std::string &s) { return hash::sha256(s.data(), s.size()); }
Bytes id(const std::string &s) { return Bytes(s.begin(), s.end()); }

Digest honest(uint64_t t) { return d("state " + std::to_string(t)); }
Digest forged(uint64_t t) { return d("forged state " + std::to_string(t)); }

LedgerConfig config(uint32_t arity, uint64_t window = 5) {
  LedgerConfig c;
  c.opening_window = c.commit_window = c.reveal_window = 10;
  c.max_committee_size = 8;
  c.max_rounds = 4;
  c.dispute_window = window;
  c.dispute_arity = arity;
  return c;
}

// A sealed run of `steps` steps whose miner logged honest states before
// step `forged_from` and forged ones from there on (never, when 0), and a
// registered verifier that replays honestly.
struct DisputeRun {
  DisputeRun(uint64_t n, uint64_t forged_from, uint32_t arity, uint64_t window = 5)
      : ledger(config(arity, window)), steps(n), task(test::test_task("task", n)) {
    commitment = test::commitment_for(task, miner);
    for (const Bytes &who : {id("owner"), miner, challenger, id("bystander")}) ledger.deposit(who, test::kFunds, now);
    ledger.post_task(id("owner"), task.encode(), now);
    ledger.register_verifier(challenger, 10, now);
    ledger.register_verifier(id("bystander"), 10, now);
    run_id = ledger.start_training_commitment(miner, commitment.encode(), now);
    for (uint64_t t = 1; t <= n; ++t) {
      const commit::StepLeaf leaf{run_id, t, forged_from != 0 && t >= forged_from ? forged(t) : honest(t), 1.0,
                                  1.0};
      tree->append(leaf.encode());
      leaves.push_back(leaf.encode());
    }
    ledger.post_checkpoint_root(miner, run_id, n, tree->root(n), {}, ++now);
  }

  Bytes proof(uint64_t step) const { return merkle::encode_proof(tree->inclusion_proof(step - 1, steps)); }
  LeafClaim claim_of(uint64_t step) const { return {leaves.at(step - 1), proof(step)}; }
  // S_0 is the commitment's initial state, agreed by both.
  Digest truth(uint64_t t) const { return t == 0 ? commitment.initial_state_digest : honest(t); }

  game::DisputeProgress open(const Digest &claim, uint64_t hi, uint64_t lo = 0) {
    const Bytes lo_leaf = lo == 0 ? Bytes{} : leaves.at(lo - 1);
    const Bytes lo_proof = lo == 0 ? Bytes{} : proof(lo);
    return ledger.open_dispute(challenger, run_id, lo_leaf, lo_proof, leaves.at(hi - 1), proof(hi), claim, now);
  }
  game::DisputeProgress miner_claims(uint64_t dispute) {
    std::vector<LeafClaim> c;
    for (uint64_t p : ledger.dispute_info(dispute).points) c.push_back(claim_of(p));
    return ledger.claim_dispute(miner, dispute, {}, c, now);
  }
  // The challenger claims `digest(t)` for each point.
  game::DisputeProgress challenger_claims(uint64_t dispute, const std::function<Digest(uint64_t)> &digest) {
    std::vector<Digest> c;
    for (uint64_t p : ledger.dispute_info(dispute).points) c.push_back(digest(p));
    return ledger.claim_dispute(challenger, dispute, c, {}, now);
  }

  Ledger ledger;
  uint64_t steps;
  uint64_t now = 100;
  task::Task task;
  commit::TrainingCommitment commitment;
  Bytes miner = id("miner");
  Bytes challenger = id("verifier");
  Digest run_id;
  std::unique_ptr<merkle::StoredTree> tree = merkle::StoredTree::in_memory();
  std::vector<Bytes> leaves;
};

void expect_round_trip(const Ledger &l) {
  const Bytes s = l.save();
  EXPECT_EQ(Ledger::load(s).save(), s);
}

TEST(LedgerDispute, TheConfigBoundsTheDisputeFields) {
  for (const auto &[window, arity, ok] : std::vector<std::tuple<uint64_t, uint32_t, bool>>{
           {0, 2, false}, {1, 1, false}, {1, 257, false}, {1, 2, true}, {1, 256, true}, {UINT64_MAX, 2, true}}) {
    SCOPED_TRACE(fmt::format("window {}, arity {}", window, arity));
    const LedgerConfig c = config(arity, window);  // clang 14 captures no structured bindings
    EXPECT_EQ(status_of([&] { Ledger l(c); }), ok ? Status::kOk : Status::kInvalidArgument);
  }
  nlohmann::json j = config(2).to_json();
  EXPECT_EQ(LedgerConfig::from_json(j), config(2));
  for (const char *key : {"dispute_window", "dispute_arity"}) {
    nlohmann::json missing = j;
    missing.erase(key);
    try {
      LedgerConfig::from_json(missing);
      ADD_FAILURE() << key;
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  // A first deadline past 2^64 - 1 is refused, not wrapped.
  DisputeRun r(8, 3, 2, UINT64_MAX);
  EXPECT_REFUSED(r.ledger, Status::kOutOfRange, r.open(honest(8), 8));
}

// Issue 15's proof, on the ledger: a run with one forged step (the miner's
// log diverges there) at every position, every arity: the dispute ends at
// exactly that step within the k-ary bound, whichever party claims first;
// the state round-trips after every call.
TEST(LedgerDispute, FindsTheForgedStepAtEveryPosition) {
  for (const uint32_t arity : {2u, 3u, 8u}) {
    for (uint64_t f = 1; f <= 40; ++f) {
      SCOPED_TRACE(fmt::format("arity {}, forged from step {}", arity, f));
      DisputeRun r(40, f, arity);
      game::DisputeProgress p = r.open(honest(40), 40);
      ASSERT_FALSE(p.ended);
      const uint64_t id = p.dispute_id;
      bool miner_first = f % 2 == 0;
      while (!p.ended) {
        ++r.now;
        if (miner_first) {
          r.miner_claims(id);
          expect_round_trip(r.ledger);
          p = r.challenger_claims(id, [&](uint64_t t) { return r.truth(t); });
        } else {
          r.challenger_claims(id, [&](uint64_t t) { return r.truth(t); });
          expect_round_trip(r.ledger);
          p = r.miner_claims(id);
        }
        miner_first = !miner_first;
        if (!p.ended) expect_round_trip(r.ledger);
      }
      const DisputeRecord &rec = *p.ended;
      EXPECT_EQ(rec.end, DisputeEnd::kStepFound);
      EXPECT_EQ(rec.step, f);
      EXPECT_EQ(rec.agreed, r.truth(f - 1));
      EXPECT_EQ(rec.miner_digest, forged(f));  // what the miner committed, not what it might say now
      EXPECT_EQ(rec.challenger_digest, honest(f));
      EXPECT_LE(rec.rounds, dispute::bisection_rounds(0, 40, arity));
      EXPECT_EQ(p.outcome_index, 0u);
      EXPECT_EQ(r.ledger.outcome_count(), 1u);
      EXPECT_EQ(r.ledger.outcome_root(), hash::leaf_hash(rec.encode()));
      EXPECT_EQ(status_of([&] { r.ledger.dispute_info(id); }), Status::kNotFound);  // pruned
      EXPECT_EQ(DisputeRecord::decode(rec.encode()), rec);
    }
  }
}

// The same with 200 steps at random positions, and a lying challenger
// against an honest miner (the challenger claims forged digests from the
// position on): the end names the step where the liar's claims begin.
TEST(LedgerDispute, TwoHundredStepsAtRandomPositionsEitherSideLying) {
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 24; ++trial) {
    const uint64_t f = 1 + rng() % 200;
    const bool miner_lies = trial % 2 == 0;
    const uint32_t arity = 2 + static_cast<uint32_t>(rng() % 7);
    SCOPED_TRACE(fmt::format("step {}, arity {}, {} lies", f, arity, miner_lies ? "miner" : "challenger"));
    DisputeRun r(200, miner_lies ? f : 0, arity);
    auto challenger_view = [&](uint64_t t) {
      return miner_lies || t < f ? r.truth(t) : forged(t);
    };
    game::DisputeProgress p = r.open(challenger_view(200), 200);
    while (!p.ended) {
      ++r.now;
      r.miner_claims(p.dispute_id);
      p = r.challenger_claims(p.dispute_id, challenger_view);
    }
    EXPECT_EQ(p.ended->step, f);
    EXPECT_EQ(p.ended->miner_digest, miner_lies ? forged(f) : honest(f));
    EXPECT_EQ(p.ended->challenger_digest, miner_lies ? honest(f) : forged(f));
    EXPECT_EQ(p.ended->agreed, r.truth(f - 1));
    EXPECT_LE(p.ended->rounds, dispute::bisection_rounds(0, 200, arity));
  }
}

// A party that stops answering loses at the deadline, not before; its late
// claim is refused; when neither answers, both lose.
TEST(LedgerDispute, APartyThatStopsAnsweringLosesAtTheDeadline) {
  for (const int silent : {1, 2, 3}) {  // 1 the miner, 2 the challenger, 3 both
    for (int rounds_first = 0; rounds_first < 3; ++rounds_first) {
      SCOPED_TRACE(fmt::format("silent {}, after {} rounds", silent, rounds_first));
      DisputeRun r(64, 20, 2, /*window=*/4);
      const uint64_t id = r.open(honest(64), 64).dispute_id;
      for (int i = 0; i < rounds_first; ++i) {
        r.now += 4;  // the last height of the round: still on time
        r.miner_claims(id);
        r.challenger_claims(id, [&](uint64_t t) { return r.truth(t); });
      }
      const uint64_t deadline = r.ledger.dispute_info(id).deadline;
      EXPECT_EQ(deadline, r.now + 4);
      if (silent == 2) r.miner_claims(id);
      if (silent == 1) r.challenger_claims(id, [&](uint64_t t) { return r.truth(t); });
      r.now = deadline;
      EXPECT_REFUSED(r.ledger, Status::kState, r.ledger.settle_dispute(id, r.now));
      r.now = deadline + 1;
      if (silent != 2) EXPECT_REFUSED(r.ledger, Status::kState, r.miner_claims(id));
      if (silent != 1)
        EXPECT_REFUSED(r.ledger, Status::kState, r.challenger_claims(id, [&](uint64_t t) { return r.truth(t); }));
      const game::DisputeProgress p = r.ledger.settle_dispute(id, r.now);
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(p.ended->end, silent == 1   ? DisputeEnd::kMinerDefault
                              : silent == 2 ? DisputeEnd::kChallengerDefault
                                            : DisputeEnd::kBothDefault);
      EXPECT_EQ(p.ended->rounds, static_cast<uint32_t>(rounds_first));
      EXPECT_EQ(p.ended->step, 0u);
      EXPECT_EQ(r.ledger.outcome_count(), 1u);
      EXPECT_REFUSED(r.ledger, Status::kNotFound, r.ledger.settle_dispute(id, r.now));
      EXPECT_REFUSED(r.ledger, Status::kNotFound, r.miner_claims(id));
    }
  }
}

// A forging miner cannot answer a round with anything but its committed
// leaves: an honest-looking leaf it never committed, a leaf of another
// step, a leaf of another run, or bare digests are refused, the state
// unchanged; so it cannot steer the bisection away from its forged step.
TEST(LedgerDispute, TheMinerCanClaimOnlyItsCommittedLeaves) {
  DisputeRun r(16, 5, 2);
  const uint64_t did = r.open(honest(16), 16).dispute_id;
  ++r.now;
  const std::vector<uint64_t> points = r.ledger.dispute_info(did).points;
  ASSERT_EQ(points, std::vector<uint64_t>{8});
  // A leaf with the honest digest of step 8: never committed.
  const commit::StepLeaf fake{r.run_id, 8, honest(8), 1.0, 1.0};
  EXPECT_REFUSED(r.ledger, Status::kProofMismatch,
                 r.ledger.claim_dispute(r.miner, did, {}, {{fake.encode(), r.proof(8)}}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.claim_dispute(r.miner, did, {}, {r.claim_of(7)}, r.now));
  const commit::StepLeaf other_run{d("another run"), 8, forged(8), 1.0, 1.0};
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.claim_dispute(r.miner, did, {}, {{other_run.encode(), r.proof(8)}}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument, r.ledger.claim_dispute(r.miner, did, {honest(8)}, {}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument, r.ledger.claim_dispute(r.miner, did, {}, {}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.claim_dispute(r.challenger, did, {}, {r.claim_of(8)}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kPermission,
                 r.ledger.claim_dispute(id("bystander"), did, {honest(8)}, {}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kNotFound, r.ledger.claim_dispute(r.miner, 7, {}, {r.claim_of(8)}, r.now));
  r.miner_claims(did);
  EXPECT_REFUSED(r.ledger, Status::kDuplicate, r.miner_claims(did));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.claim_dispute(r.challenger, did, {honest(8), honest(8)}, {}, r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.claim_dispute(r.challenger, did, {honest(8)}, {}, r.now - 1));  // time goes back
}

TEST(LedgerDispute, OpenRefusals) {
  DisputeRun r(8, 3, 2);
  const Bytes leaf = r.leaves.at(7), proof = r.proof(8);
  auto open_as = [&](const Bytes &who, const Digest &run) {
    return r.ledger.open_dispute(who, run, {}, {}, leaf, proof, honest(8), r.now);
  };
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument, open_as(Bytes{}, r.run_id));
  EXPECT_REFUSED(r.ledger, Status::kNotFound, open_as(r.challenger, d("no run")));
  EXPECT_REFUSED(r.ledger, Status::kPermission, open_as(r.miner, r.run_id));
  EXPECT_REFUSED(r.ledger, Status::kPermission, open_as(id("stranger"), r.run_id));
  // The claim is the miner's own digest: nothing is disputed.
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.open_dispute(r.challenger, r.run_id, {}, {}, leaf, proof, forged(8), r.now));
  // A leaf the run never committed, a proof of another leaf.
  const commit::StepLeaf fake{r.run_id, 8, honest(8), 1.0, 1.0};
  EXPECT_REFUSED(r.ledger, Status::kProofMismatch,
                 r.ledger.open_dispute(r.challenger, r.run_id, {}, {}, fake.encode(), proof, d("x"), r.now));
  EXPECT_REFUSED(r.ledger, Status::kProofMismatch,
                 r.ledger.open_dispute(r.challenger, r.run_id, {}, {}, leaf, r.proof(7), d("x"), r.now));
  // lo must be below hi; a lo proof needs its leaf.
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.open_dispute(r.challenger, r.run_id, leaf, proof, leaf, proof, d("x"), r.now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.open_dispute(r.challenger, r.run_id, {}, proof, leaf, proof, d("x"), r.now));
  EXPECT_REFUSED(r.ledger, Status::kMalformed,
                 r.ledger.open_dispute(r.challenger, r.run_id, {}, {}, Bytes{1, 2, 3}, proof, d("x"), r.now));
  // An unsealed run.
  DisputeRun unsealed(8, 0, 2);
  {
    Ledger l(config(2));
    for (const Bytes &who : {id("owner"), unsealed.miner, unsealed.challenger}) l.deposit(who, test::kFunds, 100);
    l.post_task(id("owner"), unsealed.task.encode(), 100);
    l.register_verifier(unsealed.challenger, 10, 100);
    const Digest run = l.start_training_commitment(unsealed.miner, unsealed.commitment.encode(), 100);
    l.post_checkpoint_root(unsealed.miner, run, 4, unsealed.tree->root(4), {}, 101);
    EXPECT_REFUSED(l, Status::kState,
                   l.open_dispute(unsealed.challenger, run, {}, {}, unsealed.leaves.at(3),
                                  merkle::encode_proof(unsealed.tree->inclusion_proof(3, 4)), d("x"), 101));
  }
  // One open dispute per challenger and run.
  r.open(honest(8), 8);
  EXPECT_REFUSED(r.ledger, Status::kDuplicate, r.open(honest(8), 8));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument, r.ledger.open_dispute(r.challenger, r.run_id, {}, {}, leaf,
                                                                           proof, honest(8), r.now - 1));
}

// A challenger that agrees on S_{t-1} (the miner's leaf) and disputes S_t,
// as a split committee's member would: nothing to bisect, the record is
// written at the opening.
TEST(LedgerDispute, AOneStepDisputeEndsWhenOpened) {
  DisputeRun r(8, 6, 4);
  const game::DisputeProgress p = r.open(honest(6), 6, 5);
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->step, 6u);
  EXPECT_EQ(p.ended->rounds, 0u);
  EXPECT_EQ(p.ended->agreed, honest(5));
  EXPECT_EQ(p.ended->lo, 5u);
  EXPECT_EQ(r.ledger.outcome_count(), 1u);
  expect_round_trip(r.ledger);
  // The record is the log's leaf; the next dispute gets the next id.
  EXPECT_EQ(r.open(honest(8), 8, 5).dispute_id, 1u);
}

TEST(LedgerDispute, LoadRefusesImpossibleDisputes) {
  DisputeRun r(32, 9, 2);
  const uint64_t id = r.open(honest(32), 32).dispute_id;
  ++r.now;
  r.miner_claims(id);  // a pending claim
  const Bytes good = r.ledger.save();
  expect_round_trip(r.ledger);
  auto mutated = [&](const std::function<void(v2::LedgerState &)> &change) {
    v2::LedgerState p;
    EXPECT_TRUE(p.ParseFromArray(good.data(), static_cast<int>(good.size())));
    change(p);
    const std::string s = p.SerializeAsString();
    return Bytes(s.begin(), s.end());
  };
  const std::vector<std::pair<const char *, std::function<void(v2::LedgerState &)>>> cases = {
      {"an id never given", [](v2::LedgerState &p) { p.set_next_dispute_id(0); }},
      {"a challenger not registered", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_challenger("nobody"); }},
      {"the miner its own challenger",
       [](v2::LedgerState &p) { p.mutable_disputes(0)->set_miner(p.disputes(0).challenger()); }},
      {"an interval past the run", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_opened_hi(33); }},
      {"a finished interval", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_lo(31); }},
      {"too many rounds", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_rounds(6); }},
      {"a round from the future", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_round_start(1000); }},
      {"nothing disputed",
       [](v2::LedgerState &p) { p.mutable_disputes(0)->set_challenger_hi(p.disputes(0).miner_hi()); }},
      {"a pending claim of the wrong length", [](v2::LedgerState &p) { p.mutable_disputes(0)->add_pending(std::string(32, 'x')); }},
      {"a pending party 3", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_pending_party(3); }},
      {"a claim from the future", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_pending_height(1000); }},
      {"a short root", [](v2::LedgerState &p) { p.mutable_disputes(0)->set_root("short"); }},
      {"an ended dispute without its record", [](v2::LedgerState &p) { p.set_next_dispute_id(2); }},
      {"format 2", [](v2::LedgerState &p) { p.set_format_version(2); }},
  };
  for (const auto &[what, change] : cases) {
    SCOPED_TRACE(what);
    const Bytes bad = mutated(change);  // clang 14 captures no structured bindings
    EXPECT_EQ(status_of([&] { Ledger::load(bad); }), Status::kMalformed);
  }
  try {
    Ledger::load(mutated([](v2::LedgerState &p) { p.set_format_version(2); }));
    ADD_FAILURE() << "format 2 loaded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("format 2 had no disputes"), std::string::npos) << e.what();
  }
  try {
    Ledger::load(mutated([](v2::LedgerState &p) { p.set_format_version(3); }));
    ADD_FAILURE() << "format 3 loaded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("format 3 had no referee"), std::string::npos) << e.what();
  }
}

TEST(LedgerDispute, JsonCallsMatchTheCppCalls) {
  DisputeRun cpp(16, 11, 3);
  DisputeRun json(16, 11, 3);
  auto hex = [](const Bytes &b) { return to_hex(b); };
  const nlohmann::json opened = json.ledger.apply({{"call", "open_dispute"},
                                                   {"caller", hex(json.challenger)},
                                                   {"now", json.now},
                                                   {"run_id", json.run_id.hex()},
                                                   {"lo_leaf", ""},
                                                   {"lo_proof", ""},
                                                   {"hi_leaf", hex(json.leaves.at(15))},
                                                   {"hi_proof", hex(json.proof(16))},
                                                   {"claim", honest(16).hex()}});
  cpp.open(honest(16), 16);
  EXPECT_EQ(json.ledger.save(), cpp.ledger.save());
  EXPECT_EQ(opened["ended"], false);
  EXPECT_EQ(opened["points"], nlohmann::json({5, 10}));
  EXPECT_EQ(opened["deadline"], json.now + 5);
  while (true) {
    ++json.now;
    ++cpp.now;
    const nlohmann::json info = json.ledger.apply({{"call", "dispute_info"}, {"dispute_id", 0}});
    nlohmann::json leaves = nlohmann::json::array(), digests = nlohmann::json::array();
    for (uint64_t p : info["points"].get<std::vector<uint64_t>>()) {
      leaves.push_back({{"step_leaf", hex(json.leaves.at(p - 1))}, {"leaf_proof", hex(json.proof(p))}});
      digests.push_back(json.truth(p).hex());
    }
    json.ledger.apply({{"call", "claim_dispute"}, {"caller", hex(json.miner)}, {"now", json.now}, {"dispute_id", 0},
                       {"claims", leaves}});
    const nlohmann::json out = json.ledger.apply({{"call", "claim_dispute"},
                                                  {"caller", hex(json.challenger)},
                                                  {"now", json.now},
                                                  {"dispute_id", 0},
                                                  {"claims", digests}});
    cpp.miner_claims(0);
    const game::DisputeProgress p = cpp.challenger_claims(0, [&](uint64_t t) { return cpp.truth(t); });
    EXPECT_EQ(json.ledger.save(), cpp.ledger.save());
    if (out["ended"]) {
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(out["record"], to_hex(p.ended->encode()));
      EXPECT_EQ(out["outcome"]["step"], 11);
      EXPECT_EQ(out["outcome"]["end"], "step_found");
      EXPECT_EQ(out["outcome_root"], json.ledger.outcome_root().hex());
      break;
    }
  }
  // Strict reading: mixed claims, a claim list too long, an unknown key.
  DisputeRun r(16, 11, 3);
  r.open(honest(16), 16);
  const nlohmann::json leaf = {{"step_leaf", hex(r.leaves.at(4))}, {"leaf_proof", hex(r.proof(5))}};
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.apply({{"call", "claim_dispute"}, {"caller", hex(r.miner)}, {"now", r.now},
                                 {"dispute_id", 0}, {"claims", {leaf, honest(10).hex()}}}));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.apply({{"call", "claim_dispute"}, {"caller", hex(r.miner)}, {"now", r.now},
                                 {"dispute_id", 0}, {"claims", std::vector<std::string>(256, honest(1).hex())}}));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.apply({{"call", "settle_dispute"}, {"now", r.now}, {"dispute_id", 0}, {"x", 1}}));
  EXPECT_REFUSED(r.ledger, Status::kState,
                 r.ledger.apply({{"call", "settle_dispute"}, {"now", r.now}, {"dispute_id", 0}}));
}

TEST(DisputeRecord, RoundTripsAndRefusesBrokenRecords) {
  DisputeRecord rec;
  rec.dispute_id = 7;
  rec.run_id = d("run");
  rec.miner = id("miner");
  rec.challenger = id("verifier");
  rec.lo = 0;
  rec.hi = 200;
  rec.end = DisputeEnd::kStepFound;
  rec.rounds = 8;
  rec.step = 37;
  rec.agreed = d("S_36");
  rec.miner_digest = d("forged");
  rec.challenger_digest = d("honest");
  const Bytes b = rec.encode();
  EXPECT_EQ(b.size(), game::kDisputeRecordFixedBytes + 5 + 8);
  EXPECT_EQ(DisputeRecord::decode(b), rec);
  EXPECT_TRUE(game::is_dispute_record(b));
  EXPECT_EQ(rec.to_json()["losers"], nlohmann::json::array());
  DisputeRecord deflt = rec;
  deflt.end = DisputeEnd::kMinerDefault;
  deflt.losers = game::kLoserMiner;
  deflt.step = 0;
  deflt.agreed = deflt.miner_digest = deflt.challenger_digest = Digest{};
  EXPECT_EQ(DisputeRecord::decode(deflt.encode()), deflt);
  EXPECT_EQ(deflt.to_json()["losers"], nlohmann::json({"miner"}));
  EXPECT_EQ(deflt.to_json()["agreed"], nullptr);
  auto refused = [](Bytes x) { return status_of([&] { DisputeRecord::decode(x); }); };
  for (size_t n = 0; n < b.size(); ++n) EXPECT_EQ(refused(Bytes(b.begin(), b.begin() + n)), Status::kMalformed) << n;
  Bytes trailing = b;
  trailing.push_back(0);
  EXPECT_EQ(refused(trailing), Status::kMalformed);
  for (const char version : {'1', '2'}) {
    Bytes old = b;
    old[6] = static_cast<uint8_t>(version);  // "pot/v1/dispute-outcome", "pot/v2/..."
    EXPECT_EQ(refused(old), Status::kMalformed);
    try {
      DisputeRecord::decode(old);
      ADD_FAILURE() << "an old record decoded";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(std::string("pot/v") + version + "/dispute-outcome"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("protocol version 3"), std::string::npos) << e.what();
    }
  }
  auto with = [&](const std::function<void(DisputeRecord &)> &f) {
    DisputeRecord x = rec;
    f(x);
    return refused(x.encode());
  };
  EXPECT_EQ(with([](DisputeRecord &x) { x.step = 201; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.step = 0; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.lo = 200; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.challenger = x.miner; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.challenger_digest = x.miner_digest; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.end = static_cast<DisputeEnd>(8); }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.end = DisputeEnd::kRuled; }), Status::kMalformed);  // in the steps phase
  EXPECT_EQ(with([](DisputeRecord &x) { x.losers = game::kLoserMiner; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.rule = game::DisputeRule::kStep; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.miner_trace = {3, d("t")}; }), Status::kMalformed);
  EXPECT_EQ(with([](DisputeRecord &x) { x.end = DisputeEnd::kBothDefault; }), Status::kMalformed);  // step set
  EXPECT_EQ(with([](DisputeRecord &x) { x.miner = Bytes{}; }), Status::kMalformed);
  EXPECT_EQ(refused(Bytes(game::kMaxDisputeRecordBytes + 1, 0)), Status::kLimit);

  // The operator phase's records: ruled by the ledger, by the referee, or
  // by nobody; each field as that end and phase have it.
  DisputeRecord ruled = rec;
  ruled.end = DisputeEnd::kRefereeRuled;
  ruled.phase = game::DisputePhase::kReferee;
  ruled.losers = game::kLoserMiner;
  ruled.rule = game::DisputeRule::kOperator;
  ruled.miner_trace = {165, d("miner trace")};
  ruled.challenger_trace = {165, d("challenger trace")};
  ruled.op_rounds = 8;
  ruled.node = 57;
  EXPECT_EQ(DisputeRecord::decode(ruled.encode()), ruled);
  EXPECT_EQ(ruled.to_json()["losers"], nlohmann::json({"miner"}));
  EXPECT_EQ(ruled.to_json()["rule"], "operator");
  EXPECT_EQ(ruled.to_json()["node"], 57);
  EXPECT_EQ(ruled.to_json()["miner_trace"]["size"], 165);
  auto with_ruled = [&](const std::function<void(DisputeRecord &)> &f) {
    DisputeRecord x = ruled;
    f(x);
    return refused(x.encode());
  };
  EXPECT_EQ(with_ruled([](DisputeRecord &) {}), Status::kOk);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) { x.rule = game::DisputeRule::kPostState; }), Status::kMalformed);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) { x.losers = 0; }), Status::kMalformed);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) { x.node = 165; }), Status::kMalformed);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) { x.challenger_trace = {}; }), Status::kMalformed);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) { x.phase = game::DisputePhase::kOpenings; }), Status::kMalformed);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) {
              x.end = DisputeEnd::kRuled;
              x.phase = game::DisputePhase::kOpenings;
              x.rule = game::DisputeRule::kPostState;
            }),
            Status::kOk);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) {
              x.end = DisputeEnd::kRefereeDefault;
              x.losers = 0;
              x.rule = game::DisputeRule::kNone;
            }),
            Status::kOk);
  EXPECT_EQ(with_ruled([](DisputeRecord &x) {
              x.end = DisputeEnd::kMinerDefault;
              x.rule = game::DisputeRule::kNone;
            }),
            Status::kMalformed);  // the parties have no deadline in the referee phase
}

}  // namespace ledger_dispute_test
