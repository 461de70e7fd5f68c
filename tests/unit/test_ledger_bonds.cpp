// Bonds (docs/ledger.md 2.18, src/bond): the book's conservation and
// refusals, the deterrent bond, and round 3's attacks on the ledger's
// economics, each played against the ledger and failing for its named
// reason while the honest party keeps what it bonded:
//   4. made-up disputes against an honest miner who is offline a while;
//   5. a slashable miner that loses nothing and comes back under a new name;
//   6. free task posts that fill the ledger's state.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "bond/book.h"
#include "bond/deterrence.h"
#include "challenge/security.h"
#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "game/ledger.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "task_test_util.h"

using namespace pot;
using bond::Balance;
using game::DisputeEnd;
using game::Ledger;
using game::LedgerConfig;
using hash::Digest;
using pot::test::status_of;

namespace ledger_bond_test {

Digest d(const std::string &s) { return hash::sha256(s.data(), s.size()); }
Bytes id(const std::string &s) { return Bytes(s.begin(), s.end()); }

constexpr uint64_t kTaskBond = 10, kMinerBond = 1000, kDisputeBond = 100;
constexpr uint64_t kWindow = 5, kGrace = 10;

LedgerConfig config() {
  LedgerConfig c;
  c.opening_window = c.commit_window = c.reveal_window = 10;
  c.max_committee_size = 8;
  c.max_rounds = 4;
  c.dispute_window = kWindow;
  c.task_bond = kTaskBond;
  c.miner_bond = kMinerBond;
  c.dispute_bond = kDisputeBond;
  c.max_task_blocks = 1000;
  c.max_open_tasks = 3;
  c.miner_grace = kGrace;
  return c;
}

// An honest miner's sealed run of 8 steps on a task ending at 600, every
// party funded with exactly what it bonds (the miner and owner) or more.
struct Bonded {
  explicit Bonded(const LedgerConfig &c = config()) : ledger(c), task(test::test_task("task", 8)) {
    task.end_height = 600;
    ledger.deposit(owner, kTaskBond, now);
    ledger.deposit(miner, kMinerBond, now);
    ledger.post_task(owner, task.encode(), now);
    commitment = test::commitment_for(task, miner);
    run_id = ledger.start_training_commitment(miner, commitment.encode(), now);
    for (uint64_t t = 1; t <= 8; ++t) {
      const commit::StepLeaf leaf{run_id, t, d("state " + std::to_string(t)), 1.0, 1.0};
      tree->append(leaf.encode());
      leaves.push_back(leaf.encode());
    }
    ledger.post_checkpoint_root(miner, run_id, 8, tree->root(8), {}, ++now);
  }
  Bytes proof(uint64_t step) const { return merkle::encode_proof(tree->inclusion_proof(step - 1, 8)); }
  // A registered verifier with `funds` deposited.
  void verifier(const Bytes &who, uint64_t funds) {
    ledger.deposit(who, funds, now);
    ledger.register_verifier(who, 1, now);
  }
  // `who` disputes the miner's S_8 from S_0 with a made-up digest.
  uint64_t dispute(const Bytes &who) {
    return ledger.open_dispute(who, run_id, {}, {}, leaves.at(7), proof(8), d("made up by " + to_hex(who)), now)
        .dispute_id;
  }
  // The miner answers the current round with its committed leaves.
  game::DisputeProgress miner_claims(uint64_t dispute) {
    std::vector<game::LeafClaim> c;
    for (uint64_t p : ledger.dispute_info(dispute).points) c.push_back({leaves.at(p - 1), proof(p)});
    return ledger.claim_dispute(miner, dispute, {}, c, now);
  }

  Ledger ledger;
  uint64_t now = 100;
  task::Task task;
  commit::TrainingCommitment commitment;
  Bytes owner = id("owner"), miner = id("miner");
  Digest run_id;
  std::unique_ptr<merkle::StoredTree> tree = merkle::StoredTree::in_memory();
  std::vector<Bytes> leaves;
};

TEST(Book, MovesConserveWhatIsHeld) {
  bond::Book b;
  const Bytes a = id("a"), z = id("z");
  EXPECT_EQ(status_of([&] { b.deposit(a, 0, "t"); }), Status::kInvalidArgument);
  b.deposit(a, 100, "t");
  EXPECT_EQ(status_of([&] { b.check_free(a, 101, "t", "a bond"); }), Status::kState);
  b.lock(a, 60);
  EXPECT_EQ(b.balance(a), (Balance{40, 60}));
  EXPECT_EQ(status_of([&] { b.withdraw(a, 41, "t"); }), Status::kState);  // 60 are locked
  b.reserve(z);
  b.pay(a, z, 25);
  b.burn(a, 5);
  b.release(a, 30);
  EXPECT_EQ(b.balance(a), (Balance{70, 0}));
  EXPECT_EQ(b.balance(z), (Balance{25, 0}));
  EXPECT_EQ(b.held() + b.burned(), 100u);
  b.withdraw(a, 70, "t");
  EXPECT_EQ(b.balance(a), Balance{});
  EXPECT_EQ(b.accounts().size(), 1u);  // an emptied account leaves no entry
  // Nothing the book holds passes 2^64 - 1.
  EXPECT_EQ(status_of([&] { b.deposit(a, UINT64_MAX - 24, "t"); }), Status::kOutOfRange);
  EXPECT_EQ(b.held(), 25u);
  // Loading: increasing identities, no empty balance.
  bond::Book r;
  r.restore_free(z, 1);
  EXPECT_EQ(status_of([&] { r.restore_free(a, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { r.restore_free(id("zz"), 0); }), Status::kInvalidArgument);
}

TEST(DeterrentBond, IsTheLeastBondThatMakesForgingWorthless) {
  // (1 - p) R <= p B, exactly, for the least such B.
  EXPECT_EQ(bond::deterrent_bond(100, 0.5), 100u);
  EXPECT_EQ(bond::deterrent_bond(100, 0.25), 300u);
  EXPECT_EQ(bond::deterrent_bond(100, 1.0), 0u);
  EXPECT_EQ(bond::deterrent_bond(0, 0.1), 0u);
  EXPECT_EQ(bond::deterrent_bond(1, 0.75), 1u);  // 0.25 <= 0.75 B: B = 1, not 0
  // p = 0.1 is not exactly a tenth: the bound is the double's, 9 R or one
  // below it, whichever deters.
  const uint64_t b = bond::deterrent_bond(1000, 0.1);
  EXPECT_TRUE(b == 9000 || b == 8999) << b;
  for (const double p : {0.039, 0.2, 1.0 / 3, 0.9, 1e-6}) {
    for (const uint64_t r : {uint64_t{1}, uint64_t{777}, uint64_t{1} << 40}) {
      const uint64_t bond = bond::deterrent_bond(r, p);
      const long double need = static_cast<long double>(r) * (1 - static_cast<long double>(p));
      EXPECT_GE(static_cast<long double>(p) * bond, need * (1 - 1e-15L)) << p << " " << r;
      if (bond > 0) {
        EXPECT_LT(static_cast<long double>(p) * (bond - 1), need * (1 + 1e-15L)) << p << " " << r;
      }
    }
  }
  EXPECT_EQ(status_of([] { bond::deterrent_bond(1, 0.0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bond::deterrent_bond(1, 1.5); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bond::deterrent_bond(1, std::nan("")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { bond::deterrent_bond(UINT64_MAX, 1e-3); }), Status::kOutOfRange);
  // The issue's example: 8 challenges over 200 steps find one forged step
  // with p = 0.04: the bond is 24 rewards.
  // with p = 8/200 (a double a hair below 0.04): 24 rewards, or one unit
  // more for the hair.
  const double p = challenge::detection_probability(200, 1, 8);
  EXPECT_NEAR(p, 0.04, 1e-12);
  EXPECT_NEAR(static_cast<double>(bond::deterrent_bond(1000, p)), 24000, 1);
}

// Attack 4: three minimum-stake identities open disputes with made-up
// claims while the honest miner is offline for 6 blocks (past the round's
// 5-block deadline). The miner's grace lets it answer; the griefers, who
// cannot back their claims, stop answering and lose by default: each
// record names its griefer, and each griefer's bond pays the miner.
TEST(LedgerBonds, AttackMadeUpDisputesCostTheGriefersNotTheOfflineMiner) {
  Bonded b;
  const std::vector<Bytes> griefers{id("griefer 1"), id("griefer 2"), id("griefer 3")};
  std::vector<uint64_t> disputes;
  for (const Bytes &g : griefers) {
    b.verifier(g, kDisputeBond);
    disputes.push_back(b.dispute(g));
    EXPECT_EQ(b.ledger.account_info(g), (Balance{0, kDisputeBond}));
  }
  // A fourth cannot dispute without the bond.
  b.ledger.register_verifier(id("broke"), 1, b.now);
  EXPECT_REFUSED(b.ledger, Status::kState,
                 b.ledger.open_dispute(id("broke"), b.run_id, {}, {}, b.leaves.at(7), b.proof(8), d("x"), b.now));
  // The griefers claim made-up digests at once; the miner is offline.
  for (size_t i = 0; i < griefers.size(); ++i) {
    std::vector<Digest> made_up;
    for (uint64_t p : b.ledger.dispute_info(disputes[i]).points) made_up.push_back(d("made up " + std::to_string(p)));
    b.ledger.claim_dispute(griefers[i], disputes[i], made_up, {}, b.now);
  }
  const uint64_t opened = b.now;
  b.now = opened + 6;  // past the round's deadline (opened + 5), within the grace
  for (uint64_t i : disputes) {
    EXPECT_EQ(b.ledger.dispute_info(i).deadline, opened + kWindow);
    EXPECT_EQ(b.ledger.dispute_info(i).miner_deadline, opened + kWindow + kGrace);
    // Nobody can end it while the miner is within its grace.
    EXPECT_REFUSED(b.ledger, Status::kState, b.ledger.settle_dispute(i, b.now));
  }
  for (uint64_t i : disputes) b.miner_claims(i);
  // The griefers cannot back their claims in the next round; they stop.
  b.now += kWindow + 1;
  for (size_t i = 0; i < griefers.size(); ++i) {
    const game::DisputeProgress p = b.ledger.settle_dispute(disputes[i], b.now);
    ASSERT_TRUE(p.ended);
    EXPECT_EQ(p.ended->end, DisputeEnd::kChallengerDefault);
    EXPECT_EQ(p.ended->losers, game::kLoserChallenger);
    EXPECT_EQ(p.ended->challenger, griefers[i]);  // the record names the griefer
    EXPECT_EQ(b.ledger.account_info(griefers[i]), Balance{});
  }
  EXPECT_FALSE(b.ledger.run_info(b.run_id).slashable);
  EXPECT_EQ(b.ledger.account_info(b.miner), (Balance{3 * kDisputeBond, kMinerBond}));
}

// The grace is bounded: a miner offline past it loses by default; its bond
// pays the challenger's costs (dispute_bond) and the rest burns.
TEST(LedgerBonds, AMinerOfflinePastItsGraceLosesItsBond) {
  Bonded b;
  const Bytes v = id("verifier");
  b.verifier(v, kDisputeBond);
  const uint64_t i = b.dispute(v);
  std::vector<Digest> claims;
  for (uint64_t p : b.ledger.dispute_info(i).points) claims.push_back(d("S " + std::to_string(p)));
  b.ledger.claim_dispute(v, i, claims, {}, b.now);
  b.now += kWindow + kGrace;
  EXPECT_REFUSED(b.ledger, Status::kState, b.ledger.settle_dispute(i, b.now));  // the grace's last block
  ++b.now;
  EXPECT_REFUSED(b.ledger, Status::kState, b.miner_claims(i));
  const game::DisputeProgress p = b.ledger.settle_dispute(i, b.now);
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->end, DisputeEnd::kMinerDefault);
  EXPECT_TRUE(b.ledger.run_info(b.run_id).slashable);
  EXPECT_EQ(b.ledger.account_info(b.miner), Balance{});
  EXPECT_EQ(b.ledger.account_info(v), (Balance{2 * kDisputeBond, 0}));
  EXPECT_EQ(b.ledger.summary().burned, kMinerBond - kDisputeBond);
}

// A miner that expects a FAIL launders its bond: a second identity of its
// own disputes the run and the miner defaults, so the bond would move to
// itself before the FAIL burns it. The winner of a dispute is paid its
// costs only (dispute_bond): the adversary keeps that and loses the rest.
TEST(LedgerBonds, AttackAMinerCannotLaunderItsBondThroughItsOwnDispute) {
  LedgerConfig c = config();
  c.max_rounds = 1;
  Bonded b(c);
  const Bytes sybil = id("miner's other identity");
  b.verifier(sybil, kDisputeBond);
  b.ledger.post_randomness(d("block"), ++b.now);
  const uint64_t cid = b.ledger.issue_challenge(b.run_id, b.now).at(0);
  // The challenged step is forged: the miner never opens it, and its other
  // identity disputes at once; the miner defaults after its grace.
  const uint64_t i = b.dispute(sybil);
  std::vector<Digest> claims;
  for (uint64_t p : b.ledger.dispute_info(i).points) claims.push_back(d("S " + std::to_string(p)));
  b.ledger.claim_dispute(sybil, i, claims, {}, b.now);
  b.now += kWindow + kGrace + 1;
  ASSERT_EQ(b.ledger.settle_dispute(i, b.now).ended->end, DisputeEnd::kMinerDefault);
  b.now = std::max(b.now, b.ledger.challenge_info(cid).opening_deadline + 1);
  EXPECT_EQ(b.ledger.finalize_challenge(cid, b.now).verdict, witness::Verdict::kFail);
  // What the two identities hold now: the sybil its own bond and the
  // miner's costs; the rest of the miner's bond is gone.
  const uint64_t kept = b.ledger.account_info(b.miner).free + b.ledger.account_info(sybil).free;
  EXPECT_EQ(kept, 2 * kDisputeBond);
  EXPECT_EQ(b.ledger.summary().burned, kMinerBond - kDisputeBond);
}

// Both parties silent: both lose, both bonds burn (nobody is owed).
TEST(LedgerBonds, BothSilentBurnBothBonds) {
  Bonded b;
  const Bytes v = id("verifier");
  b.verifier(v, kDisputeBond);
  const uint64_t i = b.dispute(v);
  b.now += kWindow + 1;
  // Past the challenger's deadline only: it alone loses so far... but the
  // miner did not claim either; it is within its grace, so it is not named.
  const game::DisputeProgress p = b.ledger.settle_dispute(i, b.now);
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->end, DisputeEnd::kChallengerDefault);
  EXPECT_EQ(b.ledger.account_info(b.miner), (Balance{kDisputeBond, kMinerBond}));
  // A second dispute left alone past the grace too: both lose.
  const Bytes w = id("verifier 2");
  b.verifier(w, kDisputeBond);
  const uint64_t j = b.dispute(w);
  b.now += kWindow + kGrace + 1;
  const game::DisputeProgress q = b.ledger.settle_dispute(j, b.now);
  ASSERT_TRUE(q.ended);
  EXPECT_EQ(q.ended->end, DisputeEnd::kBothDefault);
  EXPECT_EQ(b.ledger.account_info(w), Balance{});
  EXPECT_EQ(b.ledger.account_info(b.miner), (Balance{kDisputeBond, 0}));
  EXPECT_EQ(b.ledger.summary().burned, kDisputeBond + kMinerBond);
  const Bytes s = b.ledger.save();
  EXPECT_EQ(Ledger::load(s).save(), s);
}

// Attack 5: a miner whose run fails loses its bond (burned: no verifier
// profits from a FAIL), and coming back under a fresh identity takes a
// fresh bond: the ledger holds what "slashable" costs.
TEST(LedgerBonds, AttackASlashedMinerLosesItsBondAndANewIdentityNeedsANewOne) {
  LedgerConfig c = config();
  c.draw_delay = 1;
  c.max_rounds = 1;
  Bonded b(c);
  EXPECT_EQ(b.ledger.account_info(b.miner), (Balance{0, kMinerBond}));
  b.ledger.post_randomness(d("block"), ++b.now);
  const std::vector<uint64_t> ids = b.ledger.issue_challenge(b.run_id, b.now);
  // The miner does not open the challenged steps: FAIL at the opening
  // deadline. The first slashing burns the bond, the second finds it gone.
  b.now = b.ledger.challenge_info(ids.at(0)).opening_deadline + 1;
  for (uint64_t cid : ids) EXPECT_EQ(b.ledger.finalize_challenge(cid, b.now).verdict, witness::Verdict::kFail);
  EXPECT_TRUE(b.ledger.run_info(b.run_id).slashable);
  EXPECT_EQ(b.ledger.account_info(b.miner), Balance{});
  EXPECT_EQ(b.ledger.summary().burned, kMinerBond);
  // The same task under a fresh identity, without a new bond: refused.
  const Bytes fresh = id("fresh miner");
  const commit::TrainingCommitment again = test::commitment_for(b.task, fresh);
  EXPECT_REFUSED(b.ledger, Status::kState, b.ledger.start_training_commitment(fresh, again.encode(), b.now));
  b.ledger.deposit(fresh, kMinerBond, b.now);
  b.ledger.start_training_commitment(fresh, again.encode(), b.now);
  EXPECT_EQ(b.ledger.account_info(fresh), (Balance{0, kMinerBond}));
  // Pruning after the end gives the owner its bond back, the slashed miner
  // nothing, the fresh one (void run) its bond.
  b.now = b.task.end_height + 1;
  const game::PrunedTask p = b.ledger.prune_task(b.task.id(), b.now);
  EXPECT_EQ(p.released, kTaskBond + kMinerBond);
  EXPECT_EQ(b.ledger.account_info(b.owner), (Balance{kTaskBond, 0}));
  EXPECT_EQ(b.ledger.account_info(fresh), (Balance{kMinerBond, 0}));
  EXPECT_EQ(b.ledger.account_info(b.miner), Balance{});
  EXPECT_EQ(b.ledger.summary().held + b.ledger.summary().burned, kTaskBond + 2 * kMinerBond);
}

// Disputes open until max_task_blocks after the task's end: identities
// opening one dispute after another cannot keep its bonds locked for ever.
TEST(LedgerBonds, DisputesOpenForABoundedTimeAfterTheTasksEnd) {
  Bonded b;
  const Bytes v = id("verifier");
  b.verifier(v, 10 * kDisputeBond);
  b.now = b.task.end_height + config().max_task_blocks;
  const uint64_t i = b.dispute(v);  // the last height it opens
  b.now += kWindow + kGrace + 1;
  b.ledger.settle_dispute(i, b.now);
  EXPECT_REFUSED(b.ledger, Status::kState, b.dispute(v));
}

// A dispute keeps the task's bonds locked: prune_task waits for it.
TEST(LedgerBonds, PruningWaitsForOpenDisputes) {
  LedgerConfig c = config();
  c.max_rounds = 1;
  Bonded b(c);
  // The run's challenges (its one round, step 1's) pass unwitnessed
  // (INCONCLUSIVE): the run closes with its bond still locked.
  b.ledger.post_randomness(d("block"), ++b.now);
  const std::vector<uint64_t> ids = b.ledger.issue_challenge(b.run_id, b.now);
  for (uint64_t cid : ids) {
    const uint64_t step = b.ledger.challenge_info(cid).step;
    b.ledger.submit_opening(b.miner, cid, d("manifest"), b.leaves.at(step - 1), b.proof(step), b.now);
  }
  b.now = b.ledger.challenge_info(ids.at(0)).reveal_deadline + 1;
  for (uint64_t cid : ids) b.ledger.finalize_challenge(cid, b.now);
  ASSERT_TRUE(b.ledger.run_info(b.run_id).closed);
  const Bytes v = id("verifier");
  b.verifier(v, kDisputeBond);
  const uint64_t i = b.dispute(v);
  b.now = b.task.end_height + 1;
  EXPECT_REFUSED(b.ledger, Status::kState, b.ledger.prune_task(b.task.id(), b.now));
  b.ledger.settle_dispute(i, b.now);  // both silent past the grace: both bonds burn
  EXPECT_EQ(b.ledger.prune_task(b.task.id(), b.now).released, kTaskBond);
  EXPECT_EQ(b.ledger.summary().burned, kDisputeBond + kMinerBond);
}

// Attack 6: 1,100 free posts of tasks ending at 2^63 filled the 64 MiB
// state. Now a post needs its bond, a near end and room under the owner's
// limit; filling the state takes as many bonds as tasks.
TEST(LedgerBonds, AttackTaskPostsAreBondedAndBounded) {
  Ledger l(config());
  const Bytes spammer = id("spammer");
  uint64_t now = 1;
  task::Task t = test::test_task("spam 0", 8, task::ChallengeMode::kBitwise, 1, "spammer");
  t.end_height = now + 1000;
  EXPECT_REFUSED(l, Status::kState, l.post_task(spammer, t.encode(), now));  // no bond
  l.deposit(spammer, 100 * kTaskBond, now);
  task::Task late = t;
  late.end_height = uint64_t{1} << 63;
  EXPECT_REFUSED(l, Status::kOutOfRange, l.post_task(spammer, late.encode(), now));  // ends too late
  l.post_task(spammer, t.encode(), now);
  EXPECT_NO_THROW(l.post_task(spammer, t.encode(), now));  // a repeat: no second bond
  EXPECT_EQ(l.account_info(spammer), (Balance{99 * kTaskBond, kTaskBond}));
  for (int i = 1; i < 3; ++i) {
    task::Task u = test::test_task("spam " + std::to_string(i), 8, task::ChallengeMode::kBitwise, 1, "spammer");
    u.end_height = now + 1000;
    l.post_task(spammer, u.encode(), now);
  }
  task::Task fourth = test::test_task("spam 3", 8, task::ChallengeMode::kBitwise, 1, "spammer");
  fourth.end_height = now + 1000;
  EXPECT_REFUSED(l, Status::kLimit, l.post_task(spammer, fourth.encode(), now));  // max_open_tasks 3
  // What filling the 64 MiB cap costs: one task bond per task's bytes.
  const size_t per_task = (l.save().size() - Ledger(config()).save().size()) / 3;
  const uint64_t tasks_to_fill = game::kMaxLedgerStateBytes / per_task;
  std::printf("[ figures  ] a task adds %zu bytes: filling 64 MiB takes %llu tasks, %llu owners and %llu in bonds\n",
              per_task, static_cast<unsigned long long>(tasks_to_fill),
              static_cast<unsigned long long>(tasks_to_fill / 3),
              static_cast<unsigned long long>(tasks_to_fill * kTaskBond));
  EXPECT_GT(tasks_to_fill, 1000u);
  // Pruned after its end: the bond comes back and the owner may post again.
  now += 1001;
  l.prune_task(t.id(), now);
  fourth.end_height = now + 1000;
  l.post_task(spammer, fourth.encode(), now);
  EXPECT_EQ(l.account_info(spammer), (Balance{97 * kTaskBond, 3 * kTaskBond}));
  const Bytes s = l.save();
  EXPECT_EQ(Ledger::load(s).save(), s);
}

TEST(LedgerBonds, DepositAndWithdrawRefusals) {
  Ledger l(config());
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.deposit(Bytes{}, 1, 1));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.deposit(id("a"), 0, 1));
  l.deposit(id("a"), 5, 2);
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.deposit(id("a"), 5, 1));  // time goes forward
  EXPECT_REFUSED(l, Status::kOutOfRange, l.deposit(id("b"), UINT64_MAX - 4, 2));
  EXPECT_REFUSED(l, Status::kState, l.withdraw(id("a"), 6, 2));
  EXPECT_REFUSED(l, Status::kState, l.withdraw(id("nobody"), 1, 2));
  l.withdraw(id("a"), 5, 3);
  EXPECT_EQ(l.summary().held, 0u);
  EXPECT_EQ(l.apply({{"call", "account_info"}, {"identity", "61"}}),
            (nlohmann::json{{"ok", true}, {"identity", "61"}, {"free", 0}, {"locked", 0}}));
}

}  // namespace ledger_bond_test
