// The reference ledger: full flows with real commitments, trees and witness
// commitments, every refusal rule (status and unchanged state), and the
// canonical state encoding.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "challenge/challenge.h"
#include "commit/commitment.h"
#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "task_test_util.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "pot/v2/commitment.pb.h"
#include "pot/v2/ledger.pb.h"
#include "pot/v2/task.pb.h"
#include "dispute/op_node.h"
#include "game/ledger.h"
#include "witness/witness.h"

using namespace pot;
using hash::Digest;
using pot::test::status_of;
using game::Ledger;
using game::LedgerConfig;
using witness::Mode;
using witness::Verdict;

// An accepted no-op leaves the state unchanged too.
#define EXPECT_NO_OP(ledger, ...)                                        \
  do {                                                                   \
    const Bytes before_ = (ledger).save();                               \
    EXPECT_EQ(status_of([&] { __VA_ARGS__; }), Status::kOk);             \
    EXPECT_EQ((ledger).save(), before_) << "a repeat changed the state"; \
  } while (0)

namespace {

Digest d(const std::string &s) { return hash::sha256(s.data(), s.size()); }
Bytes id(const std::string &s) { return Bytes(s.begin(), s.end()); }
Bytes salt_for(const std::string &who) {
  const Digest h = d("salt of " + who);
  return Bytes(h.bytes.begin(), h.bytes.end());
}
nlohmann::json env_json() {
  const witness::Environment e = test::spec_environment();
  return {{"framework_version", e.framework_version},
          {"intra_op_threads", e.intra_op_threads},
          {"hardware_class", e.hardware_class}};
}

constexpr uint64_t kSteps = 8;
const LedgerConfig kConfig{.draw_delay = 1,
                           .opening_window = 10,
                           .commit_window = 10,
                           .reveal_window = 10,
                           .max_committee_size = 8,
                           .min_stake = 1,
                           .max_rounds = 4,
                           .max_attempts = 1,
                           .referee = {}};
constexpr uint64_t kStake = 10;  // each Flow verifier's

void expect_round_trip(const Ledger &l) {
  const Bytes s = l.save();
  const Ledger back = Ledger::load(s);
  EXPECT_EQ(back.save(), s);
  EXPECT_EQ(back.height(), l.height());
  EXPECT_EQ(back.config(), l.config());
}

// The task every Flow posts unless told otherwise: kSteps steps, one
// bitwise challenge per run.
task::Task make_task(task::ChallengeMode mode = task::ChallengeMode::kBitwise, uint32_t rounds = 1,
                     const std::string &label = "task", uint32_t committee_size = 8) {
  return test::test_task(label, kSteps, mode, rounds, "owner", committee_size);
}

commit::TrainingCommitment make_commitment(const Bytes &miner, const task::Task &t = make_task()) {
  return test::commitment_for(t, miner);
}

constexpr task::ChallengeMode kNorm = task::ChallengeMode::kNormBucket;

// One run of kSteps steps, its checkpoint log as a real StoredTree, and
// helpers that drive the ledger as the owner, the miner and witnesses would.
struct Flow {
  explicit Flow(bool forged = false, const LedgerConfig &config = kConfig,
                uint64_t start_height = 100, const task::Task &task_def = make_task())
      : ledger(config), now(start_height), task_value(task_def) {
    task = task_value.id();
    task_bytes = task_value.encode();
    commitment = make_commitment(miner, task_value);
    commitment_bytes = commitment.encode();
    tree = log_of(commitment.run_id(), forged, &leaves);
    // Every identity the tests bond with has funds (docs/ledger.md 2.18).
    for (const Bytes &who :
       {owner, miner, id("miner 2"), id("miner 3"), id("miner 4"), id("idle miner"), id("late miner")})
      ledger.deposit(who, test::kFunds, now);
    for (const std::string &v : verifiers) ledger.deposit(id(v), test::kFunds, now);
  }

  static Digest honest_state(uint64_t t) { return d("state " + std::to_string(t)); }
  // Every leaf commits an update norm in bucket 100 at the test task's
  // resolution (16): witnesses' buckets are compared with it.
  static double committed_norm() { return std::exp2(100.5 / 16); }
  static constexpr int64_t kCommittedBucket = 100;

  // The log of run `run`: a forging miner logs states it never computed;
  // honest replays reproduce honest_state(t).
  static std::unique_ptr<merkle::StoredTree> log_of(const Digest &run, bool forged = false,
                                                    std::vector<commit::StepLeaf> *out = nullptr) {
    auto log = merkle::StoredTree::in_memory();
    for (uint64_t t = 1; t <= kSteps; ++t) {
      const commit::StepLeaf leaf{run, t, forged ? d("forged state " + std::to_string(t)) : honest_state(t),
                                  1.0 / double(t), committed_norm()};
      log->append(leaf.encode());
      if (out) out->push_back(leaf);
    }
    return log;
  }

  // Posts the task (a no-op when it is already posted), registers the
  // verifiers (stake kStake each) and starts the run.
  void start() {
    ledger.post_task(owner, task_bytes, now);
    for (const std::string &v : verifiers) ledger.register_verifier(id(v), kStake, now);
    run_id = ledger.start_training_commitment(miner, commitment_bytes, now);
  }
  Bytes consistency(uint64_t size) const {
    return posted == 0 ? Bytes{} : merkle::encode_proof(tree->consistency_proof(posted, size));
  }
  void post(uint64_t size) {
    ledger.post_checkpoint_root(miner, run_id, size, tree->root(size), consistency(size), now);
    posted = size;
  }
  void seal() {
    start();
    post(3);
    ++now;
    post(6);
    ++now;
    post(kSteps);
  }
  // The runtime's randomness of the run's draw height (moving there first).
  static Digest randomness(uint64_t height) { return d("randomness of block " + std::to_string(height)); }
  void draw() {
    now = std::max(now, ledger.run_info(run_id).draw_height);
    ledger.post_randomness(randomness(now), now);
  }
  std::vector<uint64_t> issue() {
    draw();
    last_issue = ledger.issue_challenge(run_id, now);
    return last_issue;
  }
  // Step 1's challenge in the last issue: drawn, or challenged for certain.
  uint64_t step_1_challenge() const {
    for (uint64_t cid : last_issue)
      if (step_of(cid) == 1) return cid;
    ADD_FAILURE() << "no challenge of step 1";
    return 0;
  }
  // The task's one drawn round; step 1 is challenged too when the draw
  // missed it (docs/ledger.md 2.4), and left unopened here.
  uint64_t challenge() {
    const std::vector<uint64_t> ids = issue();
    const bool drew_step_1 = step_of(ids.at(0)) == 1;
    EXPECT_EQ(ids.size(), drew_step_1 ? 1u : 2u);
    if (!drew_step_1) {
      EXPECT_EQ(step_of(ids.at(1)), 1u);
    }
    return ids.at(0);
  }
  // The first `rounds` ids of an issue: the drawn rounds. What follows is
  // step 1's certain challenge when the draw missed it, and nothing else.
  std::vector<uint64_t> drawn(const std::vector<uint64_t> &ids, size_t rounds) const {
    EXPECT_GE(ids.size(), rounds);
    std::vector<uint64_t> d(ids.begin(), ids.begin() + std::min(rounds, ids.size()));
    bool has_step_1 = false;
    for (uint64_t cid : ids) has_step_1 = has_step_1 || step_of(cid) == 1;
    EXPECT_TRUE(has_step_1);
    EXPECT_EQ(ids.size(), rounds + (ids.size() > rounds ? 1 : 0));
    return d;
  }
  uint64_t step_of(uint64_t cid) const { return ledger.challenge_info(cid).step; }
  Bytes leaf_bytes(uint64_t step) const { return leaves.at(step - 1).encode(); }
  Bytes leaf_proof(uint64_t step) const {
    return merkle::encode_proof(tree->inclusion_proof(step - 1, kSteps));
  }
  void open(uint64_t cid) {
    const uint64_t s = step_of(cid);
    ledger.submit_opening(miner, cid, manifest, leaf_bytes(s), leaf_proof(s), now);
  }
  Digest witness_digest(const std::string &who, uint64_t cid, const witness::Finding &f) const {
    const game::ChallengeInfo c = ledger.challenge_info(cid);
    return witness::witness_commitment({c.run_id, c.step, cid, c.mode, f}, salt_for(who), id(who));
  }
  Digest witness_digest(const std::string &who, uint64_t cid, const Digest &state, int64_t bucket) const {
    return witness_digest(who, cid, test::replayed_finding(state, bucket));
  }
  void commit(const std::string &who, uint64_t cid, const witness::Finding &f) {
    ledger.commit_witness(id(who), cid, witness_digest(who, cid, f), now);
  }
  void commit(const std::string &who, uint64_t cid, const Digest &state, int64_t bucket = 0) {
    commit(who, cid, test::replayed_finding(state, bucket));
  }
  void reveal(const std::string &who, uint64_t cid, const witness::Finding &f) {
    ledger.reveal_witness_value(id(who), cid, f, salt_for(who), now);
  }
  void reveal(const std::string &who, uint64_t cid, const Digest &state, int64_t bucket = 0) {
    reveal(who, cid, test::replayed_finding(state, bucket));
  }
  void to_reveal_phase(uint64_t cid) { now = ledger.challenge_info(cid).commit_deadline + 1; }
  void to_final_phase(uint64_t cid) { now = ledger.challenge_info(cid).reveal_deadline + 1; }
  // Every listed member commits its finding, reveals it once the commit
  // phase is over; then the challenge is finalized.
  game::ChallengeVerdict judge(uint64_t cid, const std::vector<std::pair<std::string, witness::Finding>> &findings) {
    for (const auto &[who, f] : findings) commit(who, cid, f);
    to_reveal_phase(cid);
    for (const auto &[who, f] : findings) reveal(who, cid, f);
    to_final_phase(cid);
    return ledger.finalize_challenge(cid, now);
  }

  Ledger ledger;
  uint64_t now;
  // Registered by start(): with the task's committee_size 8, each challenge's committee.
  std::vector<std::string> verifiers = {"alice", "bob", "carol"};
  task::Task task_value;
  Digest task;
  Bytes task_bytes;
  Bytes owner = id("owner");
  Bytes miner = id("miner");
  Digest manifest = d("opening manifest");
  commit::TrainingCommitment commitment;
  Bytes commitment_bytes;
  Digest run_id;
  std::unique_ptr<merkle::StoredTree> tree = merkle::StoredTree::in_memory();
  std::vector<commit::StepLeaf> leaves;
  uint64_t posted = 0;
  std::vector<uint64_t> last_issue;
};

}  // namespace

TEST(Ledger, ConfigIsValidated) {
  for (auto zero : {&LedgerConfig::draw_delay, &LedgerConfig::opening_window, &LedgerConfig::commit_window,
                    &LedgerConfig::reveal_window, &LedgerConfig::min_stake}) {
    LedgerConfig c = kConfig;
    c.*zero = 0;
    EXPECT_EQ(status_of([&] { Ledger{c}; }), Status::kInvalidArgument);
  }
  for (auto zero : {&LedgerConfig::max_committee_size, &LedgerConfig::max_rounds, &LedgerConfig::max_attempts}) {
    LedgerConfig c = kConfig;
    c.*zero = 0;
    EXPECT_EQ(status_of([&] { Ledger{c}; }), Status::kInvalidArgument);
  }
  LedgerConfig large = kConfig;
  large.max_committee_size = game::kMaxCommitteeSize;
  EXPECT_EQ(Ledger(large).config(), large);
  ++large.max_committee_size;
  EXPECT_EQ(status_of([&] { Ledger{large}; }), Status::kInvalidArgument);
  // The JSON form: every key, integers only, nothing else.
  EXPECT_EQ(LedgerConfig::from_json(kConfig.to_json()), kConfig);
  for (const char *key : {"draw_delay", "opening_window", "commit_window", "reveal_window", "max_committee_size",
                          "min_stake", "max_rounds", "max_attempts"}) {
    nlohmann::json j = kConfig.to_json();
    j.erase(key);
    EXPECT_EQ(status_of([&] { LedgerConfig::from_json(j); }), Status::kInvalidArgument) << key;
    j[key] = "1";
    EXPECT_EQ(status_of([&] { LedgerConfig::from_json(j); }), Status::kInvalidArgument) << key;
    j[key] = 0;
    EXPECT_EQ(status_of([&] { LedgerConfig::from_json(j); }), Status::kInvalidArgument) << key;
  }
  nlohmann::json extra = kConfig.to_json();
  extra["beacon_rounds"] = 1;
  EXPECT_EQ(status_of([&] { LedgerConfig::from_json(extra); }), Status::kInvalidArgument);
  nlohmann::json wide = kConfig.to_json();
  wide["max_committee_size"] = uint64_t{1} << 32;
  EXPECT_EQ(status_of([&] { LedgerConfig::from_json(wide); }), Status::kInvalidArgument);
  const Ledger l(kConfig);
  EXPECT_EQ(l.config(), kConfig);
  EXPECT_EQ(l.height(), 0u);
  expect_round_trip(l);
}

TEST(Ledger, HonestFlowPasses) {
  Flow f;
  f.start();
  EXPECT_EQ(f.run_id, f.commitment.run_id());
  expect_round_trip(f.ledger);
  // The same commitment again is a no-op that returns the same run id.
  EXPECT_NO_OP(f.ledger, EXPECT_EQ(f.ledger.start_training_commitment(f.miner, f.commitment_bytes, f.now),
                                   f.run_id));
  EXPECT_NO_OP(f.ledger, EXPECT_EQ(f.ledger.post_task(f.owner, f.task_bytes, f.now), f.task));
  EXPECT_EQ(f.ledger.task_info(f.task).encode(), f.task_bytes);
  game::RunInfo r = f.ledger.run_info(f.run_id);
  EXPECT_EQ(r.run_id, f.run_id);
  EXPECT_EQ(r.task_id, f.task);
  EXPECT_EQ(r.miner_identity, f.miner);
  EXPECT_EQ(r.declared_steps, kSteps);
  EXPECT_EQ(r.latest_size, 0u);
  EXPECT_FALSE(r.sealed);

  // Three roots, the later two with RFC 9162 consistency proofs.
  f.post(3);
  expect_round_trip(f.ledger);
  ++f.now;
  f.post(6);
  EXPECT_EQ(f.ledger.run_info(f.run_id).latest_size, 6u);
  EXPECT_FALSE(f.ledger.run_info(f.run_id).sealed);
  ++f.now;
  f.post(kSteps);
  r = f.ledger.run_info(f.run_id);
  EXPECT_TRUE(r.sealed);
  EXPECT_EQ(r.latest_root, f.tree->root());
  EXPECT_EQ(r.seal_height, f.now);
  EXPECT_EQ(r.draw_height, f.now + 1);
  EXPECT_FALSE(r.drawn_from);
  EXPECT_FALSE(r.slashable);
  expect_round_trip(f.ledger);

  // The steps come from the runtime's randomness of the draw height.
  const uint64_t sealed_at = f.now;
  const uint64_t cid = f.challenge();
  EXPECT_EQ(cid, 0u);
  EXPECT_EQ(f.now, sealed_at + 1);
  r = f.ledger.run_info(f.run_id);
  ASSERT_TRUE(r.drawn_from);
  EXPECT_EQ(*r.drawn_from, (game::BlockRandomness{f.now, Flow::randomness(f.now)}));
  game::ChallengeInfo c = f.ledger.challenge_info(cid);
  EXPECT_EQ(c.run_id, f.run_id);
  EXPECT_GE(c.step, 1u);
  EXPECT_LE(c.step, kSteps);
  EXPECT_EQ(c.step, challenge::derive_challenges(Flow::randomness(f.now).view(), f.run_id, kSteps, 1).at(0));
  EXPECT_EQ(c.mode, Mode::kBitwise);
  EXPECT_EQ(c.issued_height, f.now);
  EXPECT_EQ(c.opening_deadline, f.now + 10);
  EXPECT_FALSE(c.opened);
  EXPECT_FALSE(c.verdict);
  expect_round_trip(f.ledger);

  // The commit phase starts when the opening lands.
  f.now += 3;
  f.open(cid);
  c = f.ledger.challenge_info(cid);
  EXPECT_TRUE(c.opened);
  EXPECT_EQ(c.opened_height, f.now);
  EXPECT_EQ(c.commit_deadline, f.now + 10);
  EXPECT_EQ(c.reveal_deadline, f.now + 20);
  EXPECT_EQ(c.manifest_digest, f.manifest);
  EXPECT_EQ(c.opened_state, Flow::honest_state(c.step));
  expect_round_trip(f.ledger);

  for (const char *w : {"alice", "bob", "carol"}) f.commit(w, cid, Flow::honest_state(c.step));
  EXPECT_EQ(f.ledger.challenge_info(cid).witness_commits, 3u);
  expect_round_trip(f.ledger);
  f.to_reveal_phase(cid);
  for (const char *w : {"alice", "bob", "carol"}) f.reveal(w, cid, Flow::honest_state(c.step));
  EXPECT_EQ(f.ledger.challenge_info(cid).witness_reveals, 3u);
  expect_round_trip(f.ledger);

  f.to_final_phase(cid);
  const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
  EXPECT_EQ(v.verdict, Verdict::kPass);
  EXPECT_EQ(v.cluster_size, 3u);
  EXPECT_FALSE(v.reason.empty());
  // The run's only challenge is final: the run closes, and the challenge
  // lives on as the first record of the outcome log.
  r = f.ledger.run_info(f.run_id);
  EXPECT_TRUE(r.closed);
  EXPECT_FALSE(r.slashable);
  EXPECT_EQ(r.task_id, f.task);
  EXPECT_EQ(r.miner_identity, f.miner);
  EXPECT_EQ(v.outcome_index, 0u);
  EXPECT_EQ(v.outcome.challenge_id, cid);
  EXPECT_EQ(v.outcome.run_id, f.run_id);
  EXPECT_EQ(v.outcome.step, c.step);
  EXPECT_EQ(v.outcome.verdict, Verdict::kPass);
  EXPECT_EQ(v.outcome.cause, game::Cause::kAgreement);
  EXPECT_EQ(v.outcome.committee_stake, c.committee_stake);
  EXPECT_EQ(game::Outcome::decode(v.outcome.encode()), v.outcome);
  EXPECT_EQ(f.ledger.outcome_count(), 1u);
  EXPECT_EQ(f.ledger.outcome_root(), hash::leaf_hash(v.outcome.encode()));
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.challenge_info(cid));
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.finalize_challenge(cid, f.now));
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.issue_challenge(f.run_id, f.now));
  // The closed run still holds its key: the same commitment is a no-op, so
  // a finished run cannot be registered again and challenged anew.
  EXPECT_NO_OP(f.ledger, EXPECT_EQ(f.ledger.start_training_commitment(f.miner, f.commitment_bytes, f.now),
                                   f.run_id));
  expect_round_trip(f.ledger);
  const Ledger back = Ledger::load(f.ledger.save());
  EXPECT_TRUE(back.run_info(f.run_id).closed);
  EXPECT_EQ(back.outcome_root(), f.ledger.outcome_root());
  EXPECT_EQ(back.height(), f.now);
}

TEST(Ledger, ForgedLeafFailsAndMakesTheRunSlashable) {
  Flow f(/*forged=*/true);
  f.verifiers.push_back("accomplice");
  f.seal();
  const uint64_t cid = f.challenge();
  const uint64_t step = f.step_of(cid);
  // The opening is valid: the forged leaf is in the committed log.
  f.open(cid);
  EXPECT_EQ(f.ledger.challenge_info(cid).opened_state, f.leaves[step - 1].state_digest);
  // Honest replays disagree with it; an accomplice echoing the forged digest
  // lands outside the largest cluster.
  for (const char *w : {"alice", "bob", "carol"}) f.commit(w, cid, Flow::honest_state(step));
  f.commit("accomplice", cid, f.leaves[step - 1].state_digest);
  f.to_reveal_phase(cid);
  for (const char *w : {"alice", "bob", "carol"}) f.reveal(w, cid, Flow::honest_state(step));
  f.reveal("accomplice", cid, f.leaves[step - 1].state_digest);
  f.to_final_phase(cid);
  const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
  EXPECT_EQ(v.verdict, Verdict::kFail);
  EXPECT_EQ(v.cluster_size, 3u);
  EXPECT_EQ(v.cluster_stake, 3 * kStake);
  EXPECT_TRUE(f.ledger.run_info(f.run_id).slashable);
  expect_round_trip(f.ledger);
  EXPECT_TRUE(Ledger::load(f.ledger.save()).run_info(f.run_id).slashable);
}

TEST(Ledger, NormBucketModeAdjacentBucketsPassFarBucketsFail) {
  Flow f(false, kConfig, 100, make_task(kNorm, 2));
  f.seal();
  const std::vector<uint64_t> ids = f.drawn(f.issue(), 2);
  const uint64_t pass = ids[0], fail_ = ids[1];
  EXPECT_NE(f.step_of(pass), f.step_of(fail_));
  for (uint64_t cid : ids) {
    EXPECT_EQ(f.ledger.challenge_info(cid).mode, Mode::kNormBucket);
    EXPECT_FALSE(f.ledger.challenge_info(cid).committed_bucket.has_value());  // not opened yet
    f.open(cid);
    // The reference is the opened leaf's norm, committed at training time:
    // nobody declares it after the challenge.
    const game::ChallengeInfo info = f.ledger.challenge_info(cid);
    EXPECT_EQ(info.committed_bucket, Flow::kCommittedBucket);
    EXPECT_EQ(info.opened_update_norm, Flow::committed_norm());
  }
  // Cross-architecture witnesses: replayed digests all differ, buckets are
  // close: 101 and 100 are both adjacent to the committed 100.
  f.commit("alice", pass, d("alice replay"), 101);
  f.commit("bob", pass, d("bob replay"), 101);
  f.commit("carol", pass, d("carol replay"), 100);
  f.commit("alice", fail_, d("alice replay 2"), 105);
  f.commit("bob", fail_, d("bob replay 2"), 105);
  f.to_reveal_phase(pass);
  f.reveal("alice", pass, d("alice replay"), 101);
  f.reveal("bob", pass, d("bob replay"), 101);
  f.reveal("carol", pass, d("carol replay"), 100);
  f.reveal("alice", fail_, d("alice replay 2"), 105);
  f.reveal("bob", fail_, d("bob replay 2"), 105);
  expect_round_trip(f.ledger);
  f.to_final_phase(pass);
  const game::ChallengeVerdict p = f.ledger.finalize_challenge(pass, f.now);
  EXPECT_EQ(p.verdict, Verdict::kPass);
  EXPECT_EQ(p.cluster_size, 3u);
  EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);
  const game::ChallengeVerdict q = f.ledger.finalize_challenge(fail_, f.now);
  EXPECT_EQ(q.verdict, Verdict::kFail);
  EXPECT_EQ(q.cluster_size, 2u);
  EXPECT_TRUE(f.ledger.run_info(f.run_id).slashable);
  expect_round_trip(f.ledger);
}

TEST(Ledger, TieOrTooFewRevealsIsInconclusive) {
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 2));
  f.verifiers.push_back("dave");
  f.seal();
  const std::vector<uint64_t> ids = f.issue();
  const uint64_t tie = ids[0], few = ids[1];
  const uint64_t step = f.step_of(tie);
  f.open(tie);
  f.open(few);
  f.commit("alice", tie, Flow::honest_state(step));
  f.commit("bob", tie, Flow::honest_state(step));
  f.commit("carol", tie, d("other"));
  f.commit("dave", tie, d("other"));
  f.commit("alice", few, Flow::honest_state(f.step_of(few)));
  f.commit("bob", few, Flow::honest_state(f.step_of(few)));  // never reveals
  f.to_reveal_phase(tie);
  f.reveal("alice", tie, Flow::honest_state(step));
  f.reveal("bob", tie, Flow::honest_state(step));
  f.reveal("carol", tie, d("other"));
  f.reveal("dave", tie, d("other"));
  f.reveal("alice", few, Flow::honest_state(f.step_of(few)));
  f.to_final_phase(tie);
  const game::ChallengeVerdict t = f.ledger.finalize_challenge(tie, f.now);
  EXPECT_EQ(t.verdict, Verdict::kInconclusive);
  EXPECT_EQ(t.cluster_size, 2u);
  EXPECT_STREQ(cause_name(t.cause), "split");  // all revealed, 20 against 20: the dispute game's
  const game::ChallengeVerdict q = f.ledger.finalize_challenge(few, f.now);
  EXPECT_EQ(q.verdict, Verdict::kInconclusive);  // 10 of the committee's 40: no majority
  EXPECT_STREQ(cause_name(q.cause), "participation");           // a new committee's
  EXPECT_EQ(q.cluster_size, 1u);
  // No decision, so no minority; bob committed and never revealed, carol and
  // dave never committed: all three are silent.
  EXPECT_TRUE(q.minority.empty());
  EXPECT_EQ(q.silent, (std::vector<Bytes>{id("bob"), id("carol"), id("dave")}));
  EXPECT_TRUE(t.silent.empty());
  EXPECT_EQ(q.reason,
            "no side holds a majority of the committee's stake 40: 10 agree with the opened state digest, 0 blame "
            "the miner (0 replayed other values, 0 served no valid opening), 0 misconfigured or unreplayed, 30 "
            "unrevealed");
  EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);
  expect_round_trip(f.ledger);
}

// Attack: a forger escapes FAIL by splitting the committee (accomplices
// reveal its forged digest with as much stake as the honest members) and
// has the split finalized at once, which closes the run. The closed run
// keeps its root, so an honest member disputes the challenged step after
// the close; a forger that cannot defend the step (silent here) loses and
// its closed run becomes slashable. The other way round, a griefer that
// disputes an honest miner's closed run and walks away loses, and the
// miner, which answered, stays unslashable.
TEST(Ledger, ASplitIsSettledByADisputeAfterTheRunCloses) {
  LedgerConfig config = kConfig;
  config.dispute_window = 5;
  config.referee = id("referee");
  for (const bool forged : {true, false}) {
    SCOPED_TRACE(forged ? "a forging miner" : "an honest miner and a griefer");
    Flow f(forged, config);
    f.verifiers.push_back("dave");
    f.seal();
    const uint64_t cid = f.challenge();
    const uint64_t t = f.step_of(cid);
    f.open(cid);
    const Digest committed = f.leaves.at(t - 1).state_digest;
    const Digest other = forged ? Flow::honest_state(t) : d("a griefer's digest");
    const game::ChallengeVerdict v =
        f.judge(cid, {{"alice", test::replayed_finding(committed)},
                      {"bob", test::replayed_finding(committed)},
                      {"carol", test::replayed_finding(other)},
                      {"dave", test::replayed_finding(other)}});
    ASSERT_STREQ(cause_name(v.cause), "split");
    ASSERT_TRUE(f.ledger.run_info(f.run_id).closed);
    EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);
    // Carol disputes step t from the miner's S_{t-1} (the state the
    // committee replayed from): one step, so the traces phase at once.
    const Bytes lo_leaf = t == 1 ? Bytes{} : f.leaf_bytes(t - 1);
    const Bytes lo_proof = t == 1 ? Bytes{} : f.leaf_proof(t - 1);
    const game::DisputeProgress p = f.ledger.open_dispute(id("carol"), f.run_id, lo_leaf, lo_proof, f.leaf_bytes(t),
                                                          f.leaf_proof(t), other, f.now);
    ASSERT_FALSE(p.ended);
    EXPECT_EQ(f.ledger.dispute_info(p.dispute_id).phase, game::DisputePhase::kTraces);
    // The honest party commits its trace of step t (here the post-state
    // node alone, giving its S_t); the other one stays silent.
    dispute::OpNode post{std::string(dispute::kPostStateOp), "", {}, {}};
    dispute::OpValue digest;
    digest.kind = dispute::ValueKind::kDigest;
    digest.digest = forged ? other : committed;
    post.outputs.push_back(digest);
    const Bytes node = dispute::encode_op_node(post);
    f.ledger.commit_trace(forged ? id("carol") : f.miner, p.dispute_id, 1, hash::leaf_hash(node), node, {}, ++f.now);
    f.now = f.ledger.dispute_info(p.dispute_id).deadline + 1;
    const game::DisputeProgress end = f.ledger.settle_dispute(p.dispute_id, f.now);
    ASSERT_TRUE(end.ended);
    EXPECT_EQ(end.ended->end, forged ? game::DisputeEnd::kMinerDefault : game::DisputeEnd::kChallengerDefault);
    EXPECT_EQ(f.ledger.run_info(f.run_id).slashable, forged);
    EXPECT_EQ(Ledger::load(f.ledger.save()).run_info(f.run_id).slashable, forged);
    expect_round_trip(f.ledger);
  }
}

TEST(Ledger, NoOpeningFailsAndWitnessesAreComparedWithTheCommittedBucket) {
  Flow f(false, kConfig, 100, make_task(kNorm, 2));
  f.seal();
  const std::vector<uint64_t> all = f.issue();
  const std::vector<uint64_t> ids = f.drawn(all, 2);
  ASSERT_EQ(all.size(), 3u);  // the draw missed step 1: its certain challenge is all[2]
  const uint64_t unopened = ids[0], opened = ids[1];
  // The miner opens one challenge in the last block of its opening phase:
  // witnesses still get the whole commit phase.
  f.now = f.ledger.challenge_info(opened).opening_deadline;
  f.open(opened);
  EXPECT_EQ(f.ledger.challenge_info(opened).commit_deadline, f.now + kConfig.commit_window);
  // An unopened challenge is final once its opening phase closes; the
  // miner cannot open it any more.
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.finalize_challenge(unopened, f.now));
  ++f.now;
  EXPECT_REFUSED(f.ledger, Status::kState, f.open(unopened));
  const game::ChallengeVerdict a = f.ledger.finalize_challenge(unopened, f.now);
  EXPECT_EQ(a.verdict, Verdict::kFail);
  EXPECT_EQ(a.reason, "no opening within the opening window");
  EXPECT_STREQ(cause_name(a.cause), "no_opening");
  EXPECT_EQ(a.cluster_size, 0u);
  EXPECT_TRUE(f.ledger.run_info(f.run_id).slashable);
  // The run's other challenge is open: the final one is kept whole.
  EXPECT_FALSE(f.ledger.run_info(f.run_id).closed);
  expect_round_trip(f.ledger);
  EXPECT_EQ(Ledger::load(f.ledger.save()).challenge_info(unopened).verdict->reason,
            "no opening within the opening window");
  EXPECT_EQ(f.ledger.challenge_info(unopened).verdict->outcome, a.outcome);
  // Witnesses agreeing on a bucket far from the leaf's: the miner cannot
  // move the reference after the challenge (it was committed in the leaf).
  f.commit("alice", opened, d("a"), 7);
  f.commit("bob", opened, d("b"), 7);
  f.to_reveal_phase(opened);
  f.reveal("alice", opened, d("a"), 7);
  f.reveal("bob", opened, d("b"), 7);
  f.to_final_phase(opened);
  const game::ChallengeVerdict b = f.ledger.finalize_challenge(opened, f.now);
  EXPECT_EQ(b.verdict, Verdict::kFail);
  EXPECT_EQ(b.reason,
            "members holding 20 of the committee's stake 30 blame the miner: replayed bucket 7 (stake 20), not the "
            "committed bucket");
  EXPECT_EQ(b.outcome.mode, Mode::kNormBucket);
  EXPECT_EQ(b.outcome.cause, game::Cause::kBlame);
  EXPECT_EQ(b.outcome.silent, std::vector<Bytes>{id("carol")});
  // Step 1's certain challenge, never opened, fails too. All final: the
  // run closes slashable, and the log holds the records in finalize order.
  EXPECT_FALSE(f.ledger.run_info(f.run_id).closed);
  const game::ChallengeVerdict c = f.ledger.finalize_challenge(all[2], f.now);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_TRUE(f.ledger.run_info(f.run_id).closed);
  EXPECT_TRUE(f.ledger.run_info(f.run_id).slashable);
  EXPECT_EQ(a.outcome_index, 0u);
  EXPECT_EQ(b.outcome_index, 1u);
  EXPECT_EQ(c.outcome_index, 2u);
  EXPECT_EQ(f.ledger.outcome_root(),
            hash::node_hash(hash::node_hash(hash::leaf_hash(a.outcome.encode()), hash::leaf_hash(b.outcome.encode())),
                            hash::leaf_hash(c.outcome.encode())));
  expect_round_trip(f.ledger);
}

TEST(Ledger, TimeNeverGoesBack) {
  Flow f;
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  f.commit("alice", cid, d("x"));
  const uint64_t past = f.now - 1;
  const uint64_t s = f.step_of(cid);
  Ledger &l = f.ledger;
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, f.commitment_bytes, past));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_task(f.owner, f.task_bytes, past));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.post_checkpoint_root(f.miner, f.run_id, kSteps, f.tree->root(), {}, past));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.issue_challenge(f.run_id, past));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_randomness(d("r"), past));
  EXPECT_REFUSED(
      l, Status::kInvalidArgument,
      l.submit_opening(f.miner, cid, f.manifest, f.leaf_bytes(s), f.leaf_proof(s), past));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.commit_witness(id("bob"), cid, d("y"), past));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.reveal_witness_value(id("alice"), cid, test::replayed_finding(d("x")), salt_for("alice"), past));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.finalize_challenge(cid, past));
  // An accepted repeat changes nothing but the height it proves was reached.
  const uint64_t later = f.now + 1;
  l.commit_witness(id("alice"), cid, f.witness_digest("alice", cid, d("x"), 0), later);
  EXPECT_EQ(l.height(), later);
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.commit_witness(id("bob"), cid, d("y"), f.now));
}

TEST(Ledger, PostTaskRefusals) {
  Flow f;
  Ledger &l = f.ledger;
  const Bytes &t = f.task_bytes;
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_task(Bytes{}, t, f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_task(Bytes(257, 'o'), t, f.now));
  EXPECT_REFUSED(l, Status::kMalformed, l.post_task(f.owner, ByteView(t).first(20), f.now));
  Bytes extra = t;
  extra.push_back(0x78);  // field 15, varint: parses, but is not canonical
  extra.push_back(1);
  EXPECT_REFUSED(l, Status::kMalformed, l.post_task(f.owner, extra, f.now));
  EXPECT_REFUSED(l, Status::kLimit, l.post_task(f.owner, Bytes(task::kMaxTaskBytes + 1), f.now));
  // Only the owner named in the task posts it.
  EXPECT_REFUSED(l, Status::kPermission, l.post_task(id("mallory"), t, f.now));
  // A task asking for more rounds than the ledger allows (max_rounds 4).
  const Bytes greedy = make_task(task::ChallengeMode::kBitwise, 5).encode();
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_task(f.owner, greedy, f.now));
  // A task asking for larger committees than the ledger allows (max 8).
  const Bytes crowd = make_task(task::ChallengeMode::kBitwise, 1, "task", 9).encode();
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.post_task(f.owner, crowd, f.now));
  // Another protocol version is named, not misread.
  v2::Task raw;
  ASSERT_TRUE(raw.ParseFromArray(t.data(), static_cast<int>(t.size())));
  raw.set_protocol_version(1);
  const std::string old = raw.SerializeAsString();
  EXPECT_REFUSED(l, Status::kUnsupported, l.post_task(f.owner, Bytes(old.begin(), old.end()), f.now));
  EXPECT_EQ(l.post_task(f.owner, t, f.now), f.task);
  EXPECT_NO_OP(l, l.post_task(f.owner, t, f.now));
  EXPECT_EQ(status_of([&] { l.task_info(d("no such task")); }), Status::kNotFound);
  expect_round_trip(l);
}

TEST(Ledger, StartTrainingCommitmentRefusals) {
  Flow f;
  Ledger &l = f.ledger;
  const Bytes &c = f.commitment_bytes;
  // The task is not posted yet.
  EXPECT_REFUSED(l, Status::kNotFound, l.start_training_commitment(f.miner, c, f.now));
  l.post_task(f.owner, f.task_bytes, f.now);
  EXPECT_REFUSED(l, Status::kMalformed, l.start_training_commitment(f.miner, ByteView(c).first(10), f.now));
  Bytes extra = c;
  extra.push_back(0x50);  // an unknown field: not canonical
  extra.push_back(1);
  EXPECT_REFUSED(l, Status::kMalformed, l.start_training_commitment(f.miner, extra, f.now));
  EXPECT_REFUSED(l, Status::kLimit, l.start_training_commitment(f.miner, Bytes(2000), f.now));
  EXPECT_REFUSED(l, Status::kPermission, l.start_training_commitment(id("mallory"), c, f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.start_training_commitment(Bytes{}, c, f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.start_training_commitment(Bytes(257, 'm'), c, f.now));
  // A commitment that differs from its task in any field the task fixes.
  auto differing = [&](const std::function<void(commit::TrainingCommitment &)> &change) {
    commit::TrainingCommitment m = f.commitment;
    change(m);
    return m.encode();
  };
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.initial_state_digest = d("mine"); }),
                                             f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.schedule_root = d("mine"); }), f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.dataset_root = d("mine"); }), f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.dataset_size = 1; }), f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.spec_digest = d("mine"); }), f.now));
  EXPECT_REFUSED(l, Status::kOutOfRange,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.declared_steps = 20000; }), f.now));
  // A task id nobody posted.
  EXPECT_REFUSED(l, Status::kNotFound,
                 l.start_training_commitment(f.miner, differing([](auto &m) { m.task_id = d("mine"); }), f.now));
  // A version 1 commitment is refused, naming its version.
  v2::TrainingCommitment raw;
  ASSERT_TRUE(raw.ParseFromArray(c.data(), static_cast<int>(c.size())));
  raw.set_protocol_version(1);
  const std::string old = raw.SerializeAsString();
  EXPECT_REFUSED(l, Status::kUnsupported, l.start_training_commitment(f.miner, Bytes(old.begin(), old.end()), f.now));
  f.start();
  // Another commitment of the same miner for the same task.
  const task::Task other_task = make_task(task::ChallengeMode::kBitwise, 1, "other");
  l.post_task(f.owner, other_task.encode(), f.now);
  // (A second commitment of one miner for one task would need a field the
  // task leaves open; this version's tasks fix every field but the miner.)
  // Other miners and other tasks are independent runs.
  const Bytes theirs = make_commitment(id("miner 2")).encode();
  EXPECT_EQ(l.start_training_commitment(id("miner 2"), theirs, f.now),
            commit::TrainingCommitment::decode(theirs).run_id());
  const Bytes mine2 = make_commitment(f.miner, other_task).encode();
  EXPECT_EQ(l.start_training_commitment(f.miner, mine2, f.now), commit::TrainingCommitment::decode(mine2).run_id());
  expect_round_trip(l);
}

TEST(Ledger, PostCheckpointRootRefusals) {
  Flow f;
  f.start();
  Ledger &l = f.ledger;
  auto post = [&](ByteView caller, const Digest &run, uint64_t size, const Digest &root,
                  ByteView proof) {
    l.post_checkpoint_root(caller, run, size, root, proof, f.now);
  };
  const Digest r3 = f.tree->root(3);
  EXPECT_REFUSED(l, Status::kNotFound, post(f.miner, d("no such run"), 3, r3, {}));
  EXPECT_REFUSED(l, Status::kPermission, post(id("mallory"), f.run_id, 3, r3, {}));
  EXPECT_REFUSED(l, Status::kOutOfRange, post(f.miner, f.run_id, 0, r3, {}));
  EXPECT_REFUSED(l, Status::kOutOfRange, post(f.miner, f.run_id, kSteps + 1, r3, {}));
  EXPECT_REFUSED(l, Status::kProofLength, post(f.miner, f.run_id, 3, r3, Bytes(32)));
  EXPECT_REFUSED(l, Status::kMalformed, post(f.miner, f.run_id, 3, r3, Bytes(31)));
  f.post(3);
  EXPECT_REFUSED(l, Status::kConflict, post(f.miner, f.run_id, 2, f.tree->root(2), {}));
  EXPECT_REFUSED(l, Status::kConflict, post(f.miner, f.run_id, 3, f.tree->root(4), {}));
  EXPECT_NO_OP(l, post(f.miner, f.run_id, 3, r3, {}));
  EXPECT_REFUSED(l, Status::kProofLength, post(f.miner, f.run_id, 3, r3, Bytes(32)));
  const Bytes good = f.consistency(6);
  EXPECT_REFUSED(l, Status::kProofLength, post(f.miner, f.run_id, 6, f.tree->root(6), {}));
  EXPECT_REFUSED(l, Status::kProofLength,
                 post(f.miner, f.run_id, 6, f.tree->root(6), ByteView(good).first(32)));
  Bytes flipped = good;
  flipped[5] ^= 1;
  EXPECT_REFUSED(l, Status::kProofMismatch, post(f.miner, f.run_id, 6, f.tree->root(6), flipped));
  // A root that rewrites history: a valid-length proof cannot reach it.
  EXPECT_REFUSED(l, Status::kProofMismatch, post(f.miner, f.run_id, 6, d("rewritten"), good));
  f.post(6);
  f.post(kSteps);
  EXPECT_TRUE(l.run_info(f.run_id).sealed);
  EXPECT_REFUSED(l, Status::kState, post(f.miner, f.run_id, kSteps, f.tree->root(), {}));
}

// Round 3, attack 1 (docs/security.md 6.3): the step that poisons a state
// is flagged by the run's statistics (docs/PROTOCOL.md 5.3), the run seals
// with it, and the ledger challenges it whatever the draw says. (Every
// opening of the run lists the same steps, or fails check 32: a miner
// hiding its flag fails every challenge instead.)
TEST(Ledger, AFlaggedStepIsChallengedForCertain) {
  Flow f;  // a task of one round
  f.start();
  Ledger &l = f.ledger;
  auto post = [&](uint64_t size, const std::vector<uint64_t> &flagged) {
    l.post_checkpoint_root(f.miner, f.run_id, size, f.tree->root(size), f.consistency(size), f.now,
                           game::SealPost{flagged});
  };
  EXPECT_REFUSED(l, Status::kInvalidArgument, post(3, {2}));  // only the seal carries them
  f.post(3);
  EXPECT_REFUSED(l, Status::kInvalidArgument, post(kSteps, {0}));
  EXPECT_REFUSED(l, Status::kInvalidArgument, post(kSteps, {kSteps + 1}));
  EXPECT_REFUSED(l, Status::kLimit, post(kSteps, {2, 5}));  // more than the task's one round
  // The draw this seal will meet (the test runtime's randomness is known in
  // advance; a real chain's is not): flag a step it misses.
  const uint64_t seal_height = f.now;
  const uint64_t drawn = challenge::derive_challenges(Flow::randomness(seal_height + kConfig.draw_delay).view(),
                                                      f.run_id, kSteps, 1)
                             .at(0);
  const uint64_t flagged = drawn == 5 ? 6 : 5;
  post(kSteps, {flagged});
  EXPECT_EQ(l.run_info(f.run_id).flagged_steps, std::vector<uint64_t>{flagged});
  expect_round_trip(l);
  ASSERT_NE(drawn, 1u);  // so step 1's certain challenge comes first, then the flagged step
  const std::vector<uint64_t> ids = f.issue();
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(f.step_of(ids[0]), drawn);
  EXPECT_EQ(f.step_of(ids[1]), 1u);
  EXPECT_EQ(f.step_of(ids[2]), flagged);
  EXPECT_EQ(ids[2], ids[0] + 2);
  EXPECT_FALSE(l.challenge_info(ids[2]).committee.empty());
  EXPECT_NO_OP(l, l.issue_challenge(f.run_id, f.now));
  expect_round_trip(l);
  // The flagged step is judged like any other; the run closes once both are.
  for (uint64_t cid : ids) f.open(cid);
  for (uint64_t cid : ids)
    for (const char *w : {"alice", "bob"}) f.commit(w, cid, Flow::honest_state(f.step_of(cid)));
  f.to_reveal_phase(ids[2]);
  for (uint64_t cid : ids)
    for (const char *w : {"alice", "bob"}) f.reveal(w, cid, Flow::honest_state(f.step_of(cid)));
  f.to_final_phase(ids[2]);
  for (uint64_t cid : ids) EXPECT_EQ(l.finalize_challenge(cid, f.now).verdict, Verdict::kPass);
  EXPECT_TRUE(l.run_info(f.run_id).closed);
  EXPECT_TRUE(l.run_info(f.run_id).flagged_steps.empty());

  // A flagged step the draw also picks is challenged once.
  Flow g;
  g.start();
  g.post(3);
  const uint64_t also = challenge::derive_challenges(Flow::randomness(g.now + kConfig.draw_delay).view(), g.run_id,
                                                     kSteps, 1)
                            .at(0);
  g.ledger.post_checkpoint_root(g.miner, g.run_id, kSteps, g.tree->root(), g.consistency(kSteps), g.now,
                                game::SealPost{{also}});
  const std::vector<uint64_t> one = g.issue();
  ASSERT_EQ(one.size(), also == 1 ? 1u : 2u);  // and step 1's
  EXPECT_EQ(g.step_of(one[0]), also);

  // The JSON call carries them; run_info gives them.
  Flow h;
  h.start();
  h.post(3);
  const nlohmann::json out = h.ledger.apply({{"call", "post_checkpoint_root"},
                                             {"caller", to_hex(h.miner)},
                                             {"now", h.now},
                                             {"run_id", h.run_id.hex()},
                                             {"size", kSteps},
                                             {"root", h.tree->root().hex()},
                                             {"consistency_proof", to_hex(h.consistency(kSteps))},
                                             {"flagged_steps", {4}}});
  EXPECT_EQ(out.at("ok"), true) << out.dump();
  const nlohmann::json info = h.ledger.apply({{"call", "run_info"}, {"run_id", h.run_id.hex()}});
  EXPECT_EQ(info.at("flagged_steps"), nlohmann::json::array({4})) << info.dump();
  EXPECT_REFUSED(h.ledger, Status::kInvalidArgument, h.ledger.apply({{"call", "post_checkpoint_root"},
                                             {"caller", to_hex(h.miner)},
                                             {"now", h.now},
                                             {"run_id", h.run_id.hex()},
                                             {"size", kSteps},
                                             {"root", h.tree->root().hex()},
                                             {"consistency_proof", ""},
                                             {"flagged_steps", "4"}}));
}

// Copies stopped without forcing randomness (round 3, docs/ledger.md 2.3,
// 2.4): a listed task whose steps draw no per-run randomness is valid; its
// runs are one trajectory, so the ledger takes a run's final state with its
// seal and refuses a second run sealing with the same one (a copy, or one
// training under two identities), and opens no run before the task's end,
// so no state leaves a miner while another run could still seal.
TEST(Ledger, AOneTrajectoryTaskPaysItsTrajectoryOnce) {
  task::Task t = test::test_task("deterministic", kSteps, task::ChallengeMode::kBitwise, 1, "owner", 8, 200);
  t.spec.dropout = 0;  // a dropout-free model reading its data in order
  ASSERT_TRUE(t.one_trajectory());
  Flow f(false, kConfig, 100, t);
  f.start();
  Ledger &l = f.ledger;
  f.post(3);
  const Bytes last = f.leaf_bytes(kSteps), proof = f.leaf_proof(kSteps);
  auto seal = [&](const Bytes &leaf, const Bytes &p) {
    l.post_checkpoint_root(f.miner, f.run_id, kSteps, f.tree->root(), f.consistency(kSteps), f.now,
                           game::SealPost{{}, leaf, p});
  };
  EXPECT_REFUSED(l, Status::kInvalidArgument, seal({}, {}));                     // no final leaf
  EXPECT_REFUSED(l, Status::kInvalidArgument, seal(f.leaf_bytes(kSteps - 1), proof));  // another step
  Bytes bad = proof;
  bad[0] ^= 1;
  EXPECT_REFUSED(l, Status::kProofMismatch, seal(last, bad));
  EXPECT_REFUSED(l, Status::kInvalidArgument,  // only the seal carries it
                 l.post_checkpoint_root(f.miner, f.run_id, 6, f.tree->root(6), f.consistency(6), f.now,
                                        game::SealPost{{}, last, proof}));
  seal(last, proof);
  EXPECT_EQ(l.run_info(f.run_id).final_state, Flow::honest_state(kSteps));
  expect_round_trip(l);

  // A second identity with the same trajectory: refused at its seal.
  const Bytes thief = id("miner 2");
  const commit::TrainingCommitment copy = make_commitment(thief, t);
  const Digest copy_run = l.start_training_commitment(thief, copy.encode(), f.now);
  std::vector<commit::StepLeaf> copy_leaves;
  const auto copy_log = Flow::log_of(copy_run, false, &copy_leaves);
  EXPECT_NE(copy_log->root(), f.tree->root());  // the leaves name the run: the roots differ, the states do not
  auto seal_copy = [&] {
    l.post_checkpoint_root(thief, copy_run, kSteps, copy_log->root(), {}, f.now,
                           game::SealPost{{}, copy_leaves.back().encode(),
                                          merkle::encode_proof(copy_log->inclusion_proof(kSteps - 1, kSteps))});
  };
  EXPECT_REFUSED(l, Status::kConflict, seal_copy());
  try {
    seal_copy();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("sealed with the same final state"), std::string::npos) << e.what();
  }

  // No run is drawn before the task's end, when every run is sealed or void.
  f.draw();
  EXPECT_REFUSED(l, Status::kState, l.issue_challenge(f.run_id, f.now));
  f.now = 201;
  l.post_randomness(Flow::randomness(f.now), f.now);
  f.drawn(l.issue_challenge(f.run_id, f.now), 1);
  expect_round_trip(l);

  // The JSON call carries the final leaf; run_info gives the final state.
  Flow g(false, kConfig, 100, t);
  g.start();
  const nlohmann::json out = g.ledger.apply({{"call", "post_checkpoint_root"},
                                             {"caller", to_hex(g.miner)},
                                             {"now", g.now},
                                             {"run_id", g.run_id.hex()},
                                             {"size", kSteps},
                                             {"root", g.tree->root().hex()},
                                             {"consistency_proof", ""},
                                             {"final_leaf", to_hex(g.leaf_bytes(kSteps))},
                                             {"final_leaf_proof", to_hex(g.leaf_proof(kSteps))}});
  EXPECT_EQ(out.at("ok"), true) << out.dump();
  EXPECT_EQ(g.ledger.apply({{"call", "run_info"}, {"run_id", g.run_id.hex()}}).at("final_state"),
            Flow::honest_state(kSteps).hex());
  // A task with per-run randomness keeps no final state.
  Flow h;
  h.seal();
  EXPECT_FALSE(h.ledger.run_info(h.run_id).final_state.has_value());
}

TEST(Ledger, IssueChallengeRefusals) {
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 4));
  f.start();
  Ledger &l = f.ledger;
  EXPECT_REFUSED(l, Status::kState, l.issue_challenge(f.run_id, f.now));
  f.post(3);
  EXPECT_REFUSED(l, Status::kState, l.issue_challenge(f.run_id, f.now));
  f.post(kSteps);
  const uint64_t sealed_at = f.now;
  EXPECT_REFUSED(l, Status::kNotFound, l.issue_challenge(d("no such run"), f.now));
  // The randomness of the sealing block itself is not used: the miner may
  // have seen it before it sealed.
  l.post_randomness(Flow::randomness(f.now), f.now);
  EXPECT_REFUSED(l, Status::kState, l.issue_challenge(f.run_id, f.now));
  f.now += 5;
  EXPECT_REFUSED(l, Status::kState, l.issue_challenge(f.run_id, f.now));
  // A runtime that skipped heights: the first value posted at or after the
  // draw height is the one.
  l.post_randomness(Flow::randomness(f.now), f.now);
  // Rounds and mode are the task's.
  // The drawn rounds, then step 1 (the draw missed it), challenged for certain.
  const std::vector<uint64_t> ids = l.issue_challenge(f.run_id, f.now);
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  for (uint64_t cid : ids) EXPECT_EQ(l.challenge_info(cid).mode, Mode::kBitwise);
  std::vector<uint64_t> steps = challenge::derive_challenges(Flow::randomness(f.now).view(), f.run_id, kSteps, 4);
  ASSERT_EQ(std::count(steps.begin(), steps.end(), 1u), 0);
  steps.push_back(1);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(f.step_of(ids[i]), steps[i]);
  EXPECT_EQ(l.run_info(f.run_id).drawn_from, (game::BlockRandomness{sealed_at + 5, Flow::randomness(sealed_at + 5)}));
  // Once per run: anyone may call it again, and gets the same challenges.
  ++f.now;
  l.post_randomness(Flow::randomness(f.now), f.now);
  for (int i = 0; i < 50; ++i) EXPECT_NO_OP(l, EXPECT_EQ(l.issue_challenge(f.run_id, f.now), ids));
  expect_round_trip(l);

  // Deadlines past 2^64 - 1.
  Flow h(false, kConfig, UINT64_MAX - 25);
  h.seal();
  h.draw();
  EXPECT_REFUSED(h.ledger, Status::kOutOfRange, h.ledger.issue_challenge(h.run_id, h.now));
  // A draw height past 2^64 - 1.
  Flow g(false, kConfig, UINT64_MAX - 2);
  g.start();
  g.post(3);
  ++g.now;
  g.post(6);
  ++g.now;
  EXPECT_REFUSED(g.ledger, Status::kOutOfRange,
                 g.ledger.post_checkpoint_root(g.miner, g.run_id, kSteps, g.tree->root(), g.consistency(kSteps), g.now));
}

TEST(Ledger, RandomnessIsKeptOnlyWhileARunWaitsForIt) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  EXPECT_FALSE(l.latest_randomness());
  // Posts nobody waits for are not kept (the state stays bounded by the
  // runs waiting), but the latest is known.
  const size_t before = l.save().size();
  l.post_randomness(d("r0"), f.now);
  EXPECT_EQ(l.latest_randomness(), (game::BlockRandomness{f.now, d("r0")}));
  EXPECT_EQ(l.save().size(), before + 38);  // the latest post: height and value
  // One value per height: the same again is a no-op, another is a conflict.
  EXPECT_NO_OP(l, l.post_randomness(d("r0"), f.now));
  EXPECT_REFUSED(l, Status::kConflict, l.post_randomness(d("another r0"), f.now));
  // The draw height's value is kept until the run is drawn, then dropped.
  ++f.now;
  l.post_randomness(d("r1"), f.now);
  const Bytes kept = l.save();
  expect_round_trip(l);
  ++f.now;
  l.post_randomness(d("r2"), f.now);
  f.drawn(l.issue_challenge(f.run_id, f.now), 1);
  EXPECT_EQ(l.run_info(f.run_id).drawn_from, (game::BlockRandomness{f.now - 1, d("r1")}));
  expect_round_trip(l);
  {  // r1 dropped: no run waits any more
    v2::LedgerState parsed;
    const Bytes now_saved = l.save();
    ASSERT_TRUE(parsed.ParseFromArray(now_saved.data(), static_cast<int>(now_saved.size())));
    EXPECT_EQ(parsed.randomness_size(), 0);
    ASSERT_TRUE(parsed.ParseFromArray(kept.data(), static_cast<int>(kept.size())));
    EXPECT_EQ(parsed.randomness_size(), 1);
  }

  // Two runs waiting for the same value: it stays until both are drawn.
  Flow g;
  g.seal();
  const Digest second_run = [&] {
    g.ledger.post_task(g.owner, g.task_bytes, g.now);
    const commit::TrainingCommitment c = make_commitment(id("miner 2"), g.task_value);
    const Digest run = g.ledger.start_training_commitment(id("miner 2"), c.encode(), g.now);
    auto log = Flow::log_of(run);
    g.ledger.post_checkpoint_root(id("miner 2"), run, kSteps, log->root(), {}, g.now);
    return run;
  }();
  ++g.now;
  g.ledger.post_randomness(d("shared"), g.now);
  ++g.now;
  g.ledger.post_randomness(d("later"), g.now);
  g.drawn(g.ledger.issue_challenge(g.run_id, g.now), 1);
  expect_round_trip(g.ledger);
  g.drawn(g.ledger.issue_challenge(second_run, g.now), 1);
  EXPECT_EQ(g.ledger.run_info(second_run).drawn_from, (game::BlockRandomness{g.now - 1, d("shared")}));
  expect_round_trip(g.ledger);
}

TEST(Ledger, SubmitOpeningRefusals) {
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 2));
  f.seal();
  Ledger &l = f.ledger;
  const std::vector<uint64_t> ids = f.issue();
  const uint64_t cid = ids[0];
  const uint64_t s = f.step_of(cid);
  const uint64_t other = f.step_of(ids[1]);
  const Bytes leaf = f.leaf_bytes(s), proof = f.leaf_proof(s);
  auto open = [&](ByteView caller, uint64_t c, const Digest &manifest, ByteView lf, ByteView pf) {
    l.submit_opening(caller, c, manifest, lf, pf, f.now);
  };
  EXPECT_REFUSED(l, Status::kNotFound, open(f.miner, 99, f.manifest, leaf, proof));
  EXPECT_REFUSED(l, Status::kPermission, open(id("mallory"), cid, f.manifest, leaf, proof));
  EXPECT_REFUSED(l, Status::kMalformed,
                 open(f.miner, cid, f.manifest, ByteView(leaf).first(99), proof));
  // A genuine leaf of the log, but of another step.
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 open(f.miner, cid, f.manifest, f.leaf_bytes(other), f.leaf_proof(other)));
  // The right step with another state digest, or another committed norm,
  // is not in the log.
  commit::StepLeaf forged = f.leaves.at(s - 1);
  forged.state_digest = d("forged");
  EXPECT_REFUSED(l, Status::kProofMismatch, open(f.miner, cid, f.manifest, forged.encode(), proof));
  forged = f.leaves.at(s - 1);
  forged.update_norm = 1.0;
  EXPECT_REFUSED(l, Status::kProofMismatch, open(f.miner, cid, f.manifest, forged.encode(), proof));
  // The leaf of another run (a trajectory copied from it) does not open
  // this run's challenge, whatever its proof.
  commit::StepLeaf copied = f.leaves.at(s - 1);
  copied.run_id = d("another run");
  EXPECT_REFUSED(l, Status::kInvalidArgument, open(f.miner, cid, f.manifest, copied.encode(), proof));
  EXPECT_REFUSED(l, Status::kProofLength,
                 open(f.miner, cid, f.manifest, leaf, ByteView(proof).first(64)));
  EXPECT_REFUSED(l, Status::kMalformed,
                 open(f.miner, cid, f.manifest, leaf, ByteView(proof).first(63)));
  f.open(cid);
  const uint64_t opened_at = f.now;
  // A repeat is a no-op and never moves the phases that follow the opening.
  ++f.now;
  f.open(cid);
  EXPECT_EQ(l.challenge_info(cid).opened_height, opened_at);
  EXPECT_NO_OP(l, f.open(cid));
  EXPECT_REFUSED(l, Status::kConflict, open(f.miner, cid, d("another manifest"), leaf, proof));
  f.now = l.challenge_info(ids[1]).opening_deadline;  // the last height of the phase still counts
  f.open(ids[1]);
  ++f.now;
  EXPECT_REFUSED(l, Status::kState, f.open(ids[1]));  // even a repeat: the phase is over
}

TEST(Ledger, CommitWitnessRefusals) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  const uint64_t cid = f.challenge();
  const Digest c = f.witness_digest("alice", cid, d("x"), 0);
  EXPECT_REFUSED(l, Status::kState,
                 l.commit_witness(id("alice"), cid, c, f.now));  // not opened yet
  f.open(cid);
  EXPECT_REFUSED(l, Status::kNotFound, l.commit_witness(id("alice"), 99, c, f.now));
  EXPECT_REFUSED(l, Status::kPermission, l.commit_witness(f.miner, cid, c, f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.commit_witness(Bytes{}, cid, c, f.now));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.commit_witness(Bytes(257, 'a'), cid, c, f.now));
  l.commit_witness(id("alice"), cid, c, f.now);
  EXPECT_NO_OP(l, l.commit_witness(id("alice"), cid, c, f.now));
  EXPECT_REFUSED(l, Status::kConflict,
                 l.commit_witness(id("alice"), cid, d("changed my mind"), f.now));
  f.now = l.challenge_info(cid).commit_deadline;  // the last height of the phase still counts
  l.commit_witness(id("bob"), cid, d("bob"), f.now);
  ++f.now;
  EXPECT_REFUSED(l, Status::kState, l.commit_witness(id("carol"), cid, d("carol"), f.now));
}

TEST(Ledger, OnlyTheDrawnCommitteeWitnesses) {
  Flow f;
  f.verifiers.clear();
  f.start();
  Ledger &l = f.ledger;
  // 40 verifiers of different stakes, and the miner registered as one with
  // the largest stake: it never judges its own run.
  for (uint64_t i = 0; i < 40; ++i) l.register_verifier(id(fmt::format("v{:02}", i)), i + 1, f.now);
  l.register_verifier(f.miner, 1000, f.now);
  f.post(kSteps);
  // Registered at the draw height itself: the value may already be known.
  const uint64_t draw = l.run_info(f.run_id).draw_height;
  f.now = draw;
  l.post_randomness(Flow::randomness(f.now), f.now);
  l.register_verifier(id("late"), 1000, f.now);
  const uint64_t cid = l.issue_challenge(f.run_id, f.now).at(0);
  std::vector<game::Candidate> candidates;
  for (uint64_t i = 0; i < 40; ++i) candidates.push_back({id(fmt::format("v{:02}", i)), i + 1});
  std::vector<game::Candidate> want =
      game::draw_committee(Flow::randomness(draw).view(), f.run_id, 0, candidates, f.task_value.committee_size);
  std::ranges::sort(want, {}, &game::Candidate::identity);
  const game::ChallengeInfo info = l.challenge_info(cid);
  ASSERT_EQ(info.committee.size(), f.task_value.committee_size);
  uint64_t stake = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(info.committee[i].identity, want[i].identity);
    EXPECT_EQ(info.committee[i].stake, want[i].stake);
    stake += want[i].stake;
  }
  EXPECT_EQ(info.committee_stake, stake);
  f.open(cid);
  // Nobody else commits: not the miner, not a late registrant, not 1024
  // fillers, not a registered verifier left out of the draw.
  const Bytes outsider = [&] {
    for (const game::Candidate &c : candidates)
      if (std::ranges::find(want, c.identity, &game::Candidate::identity) == want.end()) return c.identity;
    return Bytes{};
  }();
  for (const Bytes &who : {f.miner, id("late"), outsider, id("filler")})
    EXPECT_REFUSED(l, Status::kPermission, l.commit_witness(who, cid, d("c"), f.now));
  for (size_t i = 0; i < 1024; ++i)
    EXPECT_EQ(status_of([&] { l.commit_witness(id(fmt::format("filler {}", i)), cid, d("c"), f.now); }),
              Status::kPermission);
  l.commit_witness(want[0].identity, cid, d("c"), f.now);
  EXPECT_TRUE(l.challenge_info(cid).committee[0].committed);
  expect_round_trip(l);
}

TEST(Ledger, TheCommitteeDrawIsByStake) {
  // A verifier holding 90% of the stake is in almost every one-member
  // committee; the draw is exactly uniform over the stake.
  std::vector<game::Candidate> candidates = {{id("a"), 9}, {id("b"), 1}};
  int a = 0;
  for (uint32_t round = 0; round < 2000; ++round)
    a += game::draw_committee(id("value"), d("run"), round, candidates, 1).at(0).identity == id("a");
  EXPECT_NEAR(a, 1800, 60);  // 4.5 standard deviations
  // Without replacement: everyone, once, when the size allows.
  EXPECT_EQ(game::draw_committee(id("value"), d("run"), 0, candidates, 5).size(), 2u);
  EXPECT_TRUE(game::draw_committee(id("value"), d("run"), 0, {}, 5).empty());
  EXPECT_EQ(status_of([&] { game::draw_committee({}, d("run"), 0, candidates, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { game::draw_committee(id("v"), d("run"), 0, {{id("b"), 1}, {id("a"), 1}}, 1); }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { game::draw_committee(id("v"), d("run"), 0, {{id("a"), 0}}, 1); }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { game::draw_committee(id("v"), d("run"), 0, {{id("a"), UINT64_MAX}, {id("b"), 1}}, 1); }),
            Status::kInvalidArgument);
}

TEST(Ledger, TheCommitteeDrawIsTheSpecifiedScan) {
  // docs/PROTOCOL.md 11.1 written as its scan of the remaining pool, against
  // the library's tree descent, over random registries (zero-free stakes of
  // very different sizes, committees smaller and larger than the pool).
  auto reference = [](ByteView value, const Digest &run, uint32_t round, std::vector<game::Candidate> pool,
                      uint32_t size) {
    std::vector<game::Candidate> out;
    for (uint32_t j = 0; j < size && !pool.empty(); ++j) {
      uint64_t total = 0;
      for (const game::Candidate &c : pool) total += c.stake;
      const uint64_t excess = (UINT64_MAX % total + 1) % total;
      uint64_t y = 0;
      for (uint64_t counter = 0;; ++counter) {
        hash::Sha256 h;
        hash::begin_tagged(h, "pot/v2/committee");
        h.update_u32le(static_cast<uint32_t>(value.size())).update(value).update(run.view());
        const Digest dg = h.update_u32le(round).update_u32le(j).update_u64le(counter).finish();
        const uint64_t x = get_u64le(dg.bytes.data());
        if (excess != 0 && x > UINT64_MAX - excess) continue;
        y = x % total;
        break;
      }
      size_t i = 0;
      for (uint64_t before = 0; y >= before + pool[i].stake; ++i) before += pool[i].stake;
      out.push_back(pool[i]);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return out;
  };
  uint64_t seed = 14;
  auto next = [&] {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    return seed >> 33;
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<game::Candidate> pool;
    const uint64_t n = 1 + next() % 60;
    for (uint64_t i = 0; i < n; ++i)
      pool.push_back({id(fmt::format("v{:03}", i)), 1 + (next() % 4 == 0 ? next() % 1000000 : next() % 10)});
    const uint32_t size = static_cast<uint32_t>(1 + next() % 70);
    const Bytes value = id(fmt::format("value {}", trial));
    const Digest run = d(fmt::format("run {}", trial));
    const std::vector<std::vector<game::Candidate>> all = game::draw_committees(value, run, 3, pool, size);
    for (uint32_t round = 0; round < 3; ++round) {
      const std::vector<game::Candidate> want = reference(value, run, round, pool, size);
      ASSERT_EQ(game::draw_committee(value, run, round, pool, size), want) << trial;
      ASSERT_EQ(all[round], want) << trial;
    }
  }
}

TEST(Ledger, RegisterVerifierRefusals) {
  LedgerConfig config = kConfig;
  config.min_stake = 5;
  Ledger l(config);
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.register_verifier(id("alice"), 4, 1));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.register_verifier(Bytes{}, 5, 1));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.register_verifier(Bytes(257, 'a'), 5, 1));
  l.register_verifier(id("alice"), 5, 1);
  EXPECT_EQ(l.verifier_info(id("alice")).registered_height, 1u);
  EXPECT_NO_OP(l, l.register_verifier(id("alice"), 5, 1));
  EXPECT_REFUSED(l, Status::kConflict, l.register_verifier(id("alice"), 6, 1));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.register_verifier(id("bob"), 5, 0));  // time goes back
  l.register_verifier(id("bob"), UINT64_MAX - 5, 2);
  EXPECT_REFUSED(l, Status::kOutOfRange, l.register_verifier(id("carol"), 5, 2));
  EXPECT_EQ(status_of([&] { l.verifier_info(id("carol")); }), Status::kNotFound);
  expect_round_trip(l);
}

TEST(Ledger, StakeNotHeadcountDecides) {
  // Four colluders echo a forged digest; one honest verifier holds more
  // stake than the four together: FAIL. With the stakes swapped: PASS for
  // the forgery is what four colluders holding the majority could do.
  for (const bool honest_whale : {true, false}) {
    Flow f(/*forged=*/true);
    f.verifiers.clear();
    f.start();
    f.ledger.register_verifier(id("honest"), honest_whale ? 50 : 5, f.now);
    for (const char *w : {"c1", "c2", "c3", "c4"}) f.ledger.register_verifier(id(w), honest_whale ? 10 : 20, f.now);
    f.post(kSteps);
    const uint64_t cid = f.challenge();
    const uint64_t step = f.step_of(cid);
    f.open(cid);
    f.commit("honest", cid, Flow::honest_state(step));
    for (const char *w : {"c1", "c2", "c3", "c4"}) f.commit(w, cid, f.leaves[step - 1].state_digest);
    f.to_reveal_phase(cid);
    f.reveal("honest", cid, Flow::honest_state(step));
    for (const char *w : {"c1", "c2", "c3", "c4"}) f.reveal(w, cid, f.leaves[step - 1].state_digest);
    f.to_final_phase(cid);
    const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
    EXPECT_EQ(v.verdict, honest_whale ? Verdict::kFail : Verdict::kPass);
    EXPECT_EQ(v.cluster_size, honest_whale ? 1u : 4u);
    // Who answers for it: the members outside the deciding group.
    EXPECT_EQ(v.minority, honest_whale ? (std::vector<Bytes>{id("c1"), id("c2"), id("c3"), id("c4")})
                                       : std::vector<Bytes>{id("honest")});
    EXPECT_TRUE(v.silent.empty());
    // The record a chain acts on once the challenge is pruned says the same.
    EXPECT_EQ(v.outcome.minority, v.minority);
    EXPECT_EQ(game::Outcome::decode(v.outcome.encode()).minority, v.minority);
    EXPECT_EQ(f.ledger.run_info(f.run_id).slashable, honest_whale);
    expect_round_trip(f.ledger);
  }
}

namespace {
witness::Finding unavailable_finding() {
  witness::Finding f = test::replayed_finding({});
  f.kind = witness::Kind::kUnavailable;
  f.replayed_state = {};
  return f;
}
witness::Finding invalid_opening_finding(commit::OpeningCheck check) {
  witness::Finding f = test::replayed_finding({});
  f.kind = witness::Kind::kInvalidOpening;
  f.replayed_state = {};
  f.check = check;
  return f;
}
}  // namespace

TEST(Ledger, MembersServedNoValidOpeningBlameTheMiner) {
  // A forging miner serves its opening to one member only (who replays the
  // honest state, not the forged one), nothing to another and a corrupted
  // sample to the third: every member blames it, and together they hold
  // the majority: FAIL. Served nothing valid alone, a minority cannot.
  for (const bool forged : {true, false}) {
    Flow f(forged);
    f.verifiers.clear();
    f.start();
    for (const char *w : {"replayer", "starved", "corrupted", "honest"})
      f.ledger.register_verifier(id(w), std::string(w) == "honest" ? 35 : 30, f.now);
    f.post(kSteps);
    const uint64_t cid = f.challenge();
    const uint64_t step = f.step_of(cid);
    f.open(cid);
    // Against the honest miner, "starved" and "corrupted" lie (30 + 30 of
    // 125); the others replay the honest state.
    f.commit("replayer", cid, Flow::honest_state(step));
    f.commit("starved", cid, unavailable_finding());
    f.commit("corrupted", cid, invalid_opening_finding(commit::OpeningCheck::kSampleProof));
    f.commit("honest", cid, Flow::honest_state(step));
    f.to_reveal_phase(cid);
    f.reveal("replayer", cid, Flow::honest_state(step));
    f.reveal("starved", cid, unavailable_finding());
    f.reveal("corrupted", cid, invalid_opening_finding(commit::OpeningCheck::kSampleProof));
    if (!forged) f.reveal("honest", cid, Flow::honest_state(step));
    f.to_final_phase(cid);
    const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
    if (forged) {
      // The honest state is not the forged leaf's: all three blame the
      // miner, 90 of 125; "honest" stayed silent.
      EXPECT_EQ(v.verdict, Verdict::kFail);
      EXPECT_STREQ(cause_name(v.cause), "blame");
      EXPECT_EQ(v.cluster_size, 3u);
      EXPECT_EQ(v.cluster_stake, 90u);
      EXPECT_TRUE(v.minority.empty());
      EXPECT_EQ(v.silent, std::vector<Bytes>{id("honest")});
      EXPECT_NE(v.reason.find("were served no valid opening (stake 60)"), std::string::npos) << v.reason;
      EXPECT_TRUE(f.ledger.run_info(f.run_id).slashable);
    } else {
      // 65 of 125 agree: the two liars are the minority.
      EXPECT_EQ(v.verdict, Verdict::kPass);
      EXPECT_STREQ(cause_name(v.cause), "agreement");
      EXPECT_EQ(v.minority, (std::vector<Bytes>{id("corrupted"), id("starved")}));
      EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);
    }
    // The statements are kept as revealed: a reload re-derives the verdict.
    expect_round_trip(f.ledger);
  }
}

TEST(Ledger, AMisconfiguredMemberIsRecordedNotCounted) {
  // Three members replay an honest step on 2 intra-op threads (the spec
  // pins 1) and agree on one wrong digest. They state their environment,
  // so the ledger sees they could not judge the step bitwise: their
  // reveals are not counted, and the honest miner is not slashable.
  Flow f;
  f.verifiers.clear();
  f.start();
  for (const char *w : {"m1", "m2", "m3", "honest"}) f.ledger.register_verifier(id(w), 10, f.now);
  f.post(kSteps);
  const uint64_t cid = f.challenge();
  const uint64_t step = f.step_of(cid);
  f.open(cid);
  witness::Finding wrong = test::replayed_finding(d("2-thread replay"));
  wrong.environment.intra_op_threads = 2;
  const game::ChallengeVerdict v = f.judge(
      cid, {{"m1", wrong}, {"m2", wrong}, {"m3", wrong}, {"honest", test::replayed_finding(Flow::honest_state(step))}});
  EXPECT_EQ(v.verdict, Verdict::kInconclusive);
  EXPECT_EQ(v.misconfigured, (std::vector<Bytes>{id("m1"), id("m2"), id("m3")}));
  EXPECT_STREQ(cause_name(v.cause), "participation");  // 10 of 40 counted: a new committee could decide

  // A member that verified with another spec or program than the task's
  // (checks 18, 19) states a fault of its own inputs: not counted either.
  Flow g;
  g.seal();
  const uint64_t cid2 = g.challenge();
  g.open(cid2);
  const game::ChallengeVerdict w =
      g.judge(cid2, {{"alice", invalid_opening_finding(commit::OpeningCheck::kProgram)},
                     {"bob", invalid_opening_finding(commit::OpeningCheck::kSpec)},
                     {"carol", invalid_opening_finding(commit::OpeningCheck::kSampleProof)}});
  EXPECT_EQ(w.verdict, Verdict::kInconclusive);  // carol's 10 of 30 blame: no majority
  EXPECT_EQ(w.misconfigured, (std::vector<Bytes>{id("alice"), id("bob")}));
  EXPECT_FALSE(g.ledger.run_info(g.run_id).slashable);
  EXPECT_TRUE(v.minority.empty());
  EXPECT_NE(v.reason.find("30 misconfigured"), std::string::npos) << v.reason;
  EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);
  expect_round_trip(f.ledger);
  // Had they stated the spec's threads, they would be three of four: FAIL.
  // (What the environment statement buys is accountability: a member that
  // states the spec's environment and is wrong is provably wrong.)
}

TEST(Ledger, ACommitteeFindingTheTasksProgramAtFaultBlamesTheTaskNotTheMiner) {
  // Check 30 (round 3, attacks 3 and 8): a program whose declared randomness
  // changes nothing, or whose result depends on the thread count, decides
  // the step, not the miner. Before 0.3.0 such members were recorded as
  // misconfigured: excluded and redrawn, while the task's owner lost nothing.
  Flow f;
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  const uint64_t burned_before = f.ledger.summary().burned;
  const bond::Balance owner_before = f.ledger.account_info(f.owner);
  const game::ChallengeVerdict v =
      f.judge(cid, {{"alice", invalid_opening_finding(commit::OpeningCheck::kTaskProgram)},
                    {"bob", invalid_opening_finding(commit::OpeningCheck::kTaskProgram)},
                    {"carol", test::replayed_finding(Flow::honest_state(f.step_of(cid)))}});
  EXPECT_EQ(v.verdict, Verdict::kInconclusive);
  EXPECT_STREQ(cause_name(v.cause), "task_program");
  EXPECT_FALSE(v.rerun);  // another committee would find the same program
  EXPECT_EQ(v.cluster_stake, 2 * kStake);
  EXPECT_TRUE(v.misconfigured.empty());
  EXPECT_EQ(v.minority, std::vector<Bytes>{id("carol")});
  EXPECT_NE(v.reason.find("find the task's program at fault"), std::string::npos) << v.reason;
  EXPECT_FALSE(f.ledger.run_info(f.run_id).slashable);  // never against the miner
  // The owner's bond burned; the task takes no new runs.
  EXPECT_TRUE(f.ledger.task_program_fault(f.task));
  EXPECT_EQ(f.ledger.summary().burned, burned_before + kConfig.task_bond);
  EXPECT_EQ(f.ledger.account_info(f.owner).locked, owner_before.locked - kConfig.task_bond);
  const Bytes second = make_commitment(id("miner 2"), f.task_value).encode();
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.start_training_commitment(id("miner 2"), second, f.now));
  expect_round_trip(f.ledger);
  EXPECT_TRUE(Ledger::load(f.ledger.save()).task_program_fault(f.task));

  // A minority naming check 30 decides nothing: with the others silent the
  // challenge waits for a new committee, as before.
  Flow g;
  g.seal();
  const uint64_t cid2 = g.challenge();
  g.open(cid2);
  const game::ChallengeVerdict w =
      g.judge(cid2, {{"alice", invalid_opening_finding(commit::OpeningCheck::kTaskProgram)}});
  EXPECT_EQ(w.verdict, Verdict::kInconclusive);
  EXPECT_STREQ(cause_name(w.cause), "participation");
  EXPECT_NE(w.reason.find("10 blame the task's program, "), std::string::npos) << w.reason;
  EXPECT_FALSE(g.ledger.task_program_fault(g.task));
}

TEST(Ledger, AWitnessThatDidNotReplayIsRecordedNotCounted) {
  // Attack 5: the opened state digest is public once the step is opened, so
  // a lazy member can state it without replaying. It cannot state the
  // step's gradient, which the miner never publishes: bitwise, it stands
  // apart from the members that replayed, and is recorded as unreplayed.
  for (const bool forged : {false, true}) {
    Flow f(forged);
    f.seal();
    const uint64_t cid = f.challenge();
    const uint64_t step = f.step_of(cid);
    f.open(cid);
    witness::Finding honest = test::replayed_finding(Flow::honest_state(step));
    honest.gradient_digest = d("the step's gradient");
    witness::Finding lazy = test::replayed_finding(f.leaves[step - 1].state_digest);
    lazy.gradient_digest = d("a guess");
    const game::ChallengeVerdict v = f.judge(cid, {{"alice", honest}, {"bob", honest}, {"carol", lazy}});
    if (!forged) {
      EXPECT_EQ(v.verdict, Verdict::kPass);
      EXPECT_EQ(v.cluster_stake, 2 * kStake);
      EXPECT_EQ(v.unreplayed, std::vector<Bytes>{id("carol")});
      EXPECT_TRUE(v.minority.empty());
    } else {
      // Against a forger the copied digest is simply wrong: carol is the
      // minority of a FAIL.
      EXPECT_EQ(v.verdict, Verdict::kFail);
      EXPECT_TRUE(v.unreplayed.empty());
      EXPECT_EQ(v.minority, std::vector<Bytes>{id("carol")});
    }
    expect_round_trip(f.ledger);
  }
  // Norm-bucket mode cannot tell: gradients differ in their bits across
  // architectures, so every matching bucket counts.
  Flow g(false, kConfig, 100, make_task(kNorm));
  g.seal();
  const uint64_t cid = g.challenge();
  g.open(cid);
  std::vector<std::pair<std::string, witness::Finding>> findings;
  for (const char *w : {"alice", "bob", "carol"}) {
    witness::Finding fd = test::replayed_finding(d(w), Flow::kCommittedBucket);
    fd.gradient_digest = d(std::string(w) + "'s gradient");
    findings.emplace_back(w, fd);
  }
  const game::ChallengeVerdict v = g.judge(cid, findings);
  EXPECT_EQ(v.verdict, Verdict::kPass);
  EXPECT_EQ(v.cluster_size, 3u);
  EXPECT_TRUE(v.unreplayed.empty());
}

TEST(Ledger, NormBucketModeCountsAnyThreadsAndHardware) {
  Flow f(false, kConfig, 100, make_task(kNorm));
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  witness::Finding other = test::replayed_finding(d("aarch64 replay"), Flow::kCommittedBucket + 1);
  other.environment = {"1.13.1", 8, "cpu-aarch64/aten:default/onednn:any"};
  witness::Finding old_torch = test::replayed_finding(d("old replay"), Flow::kCommittedBucket);
  old_torch.environment.framework_version = "1.12.1";
  const game::ChallengeVerdict v = f.judge(cid, {{"alice", other}, {"bob", other}, {"carol", old_torch}});
  EXPECT_EQ(v.verdict, Verdict::kPass);
  EXPECT_EQ(v.misconfigured, std::vector<Bytes>{id("carol")});  // another release replays other bits
  expect_round_trip(f.ledger);
}

TEST(Ledger, AReproducibleTaskCountsBitwiseStatementsOnAnyThreadsAndHardware) {
  // pot-repro/1 (PROTOCOL 14.6): the spec names no thread count and no
  // class, so a bitwise statement made on any machine is the step's bits.
  // Judged by the native rule (the spec's threads and class), every member
  // would be misconfigured and a forged run never failed.
  task::Task t = make_task();
  t.spec.arithmetic = spec::Arithmetic::kRepro1;
  t.spec.intra_op_threads = 0;
  t.spec.hardware_class.clear();
  Flow f(/*forged=*/true, kConfig, 100, t);
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  const uint64_t step = f.step_of(cid);
  witness::Finding arm = test::replayed_finding(Flow::honest_state(step));
  arm.environment = {"1.13.1", 8, "cpu-aarch64/aten:default/onednn:none"};
  witness::Finding x86 = test::replayed_finding(Flow::honest_state(step));
  x86.environment = {"1.13.1", 3, "cpu-x86_64/aten:avx2/onednn:avx2"};
  witness::Finding old_torch = test::replayed_finding(Flow::honest_state(step));
  old_torch.environment.framework_version = "1.12.1";
  const game::ChallengeVerdict v = f.judge(cid, {{"alice", arm}, {"bob", x86}, {"carol", old_torch}});
  EXPECT_EQ(v.verdict, Verdict::kFail);
  EXPECT_EQ(v.misconfigured, std::vector<Bytes>{id("carol")});  // the release still decides the bits
  expect_round_trip(f.ledger);
}

TEST(Ledger, AStatementOpensOnlyOnItsChallenge) {
  // Two challenges of one run: a member's statement committed on one does
  // not open on the other, even with the same salt and identity.
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 2));
  f.seal();
  const std::vector<uint64_t> ids = f.issue();
  f.open(ids[0]);
  f.open(ids[1]);
  const witness::Finding fd = test::replayed_finding(Flow::honest_state(f.step_of(ids[0])));
  f.ledger.commit_witness(id("alice"), ids[1], f.witness_digest("alice", ids[0], fd), f.now);
  f.to_reveal_phase(ids[1]);
  EXPECT_REFUSED(f.ledger, Status::kProofMismatch, f.reveal("alice", ids[1], fd));
  // A finding whose kind needs a check it does not name is refused as an
  // argument, before any comparison.
  witness::Finding bad = invalid_opening_finding(commit::OpeningCheck::kReplayedState);
  EXPECT_REFUSED(f.ledger, Status::kInvalidArgument, f.reveal("alice", ids[1], bad));
}

TEST(Ledger, TheSmallestRevealsRoundTrip) {
  // An unavailable finding with the shortest environment fields and a
  // 16-byte salt is a few dozen bytes: load's size floor must admit it.
  Flow f;
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  witness::Finding small = unavailable_finding();
  small.environment = {"1", 1, "c"};
  const game::ChallengeInfo info = f.ledger.challenge_info(cid);
  const Bytes salt(16, 7);
  f.ledger.commit_witness(id("bob"), cid,
                          witness::witness_commitment({info.run_id, info.step, cid, info.mode, small}, salt, id("bob")),
                          f.now);
  f.to_reveal_phase(cid);
  f.ledger.reveal_witness_value(id("bob"), cid, small, salt, f.now);
  f.to_final_phase(cid);
  const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
  EXPECT_EQ(v.misconfigured, std::vector<Bytes>{id("bob")});  // release "1" is not the spec's 1.13
  expect_round_trip(f.ledger);
}

TEST(Ledger, AChallengeWithoutACommitteeIsInconclusive) {
  Flow f;
  f.verifiers.clear();
  f.seal();
  const uint64_t cid = f.challenge();
  EXPECT_TRUE(f.ledger.challenge_info(cid).committee.empty());
  f.open(cid);
  f.to_final_phase(cid);
  const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);
  EXPECT_EQ(v.verdict, Verdict::kInconclusive);
  EXPECT_EQ(v.reason, "no committee: no verifier was registered before the draw");
  EXPECT_STREQ(cause_name(v.cause), "no_committee");
  expect_round_trip(f.ledger);
}

TEST(Ledger, RevealWitnessValueRefusals) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  const uint64_t cid = f.challenge();
  const Digest x = d("x");
  f.open(cid);
  f.commit("alice", cid, x, 3);
  f.commit("bob", cid, x, 3);
  auto reveal = [&](const std::string &who, const Digest &state, int64_t bucket, ByteView salt) {
    l.reveal_witness_value(id(who), cid, test::replayed_finding(state, bucket), salt, f.now);
  };
  EXPECT_REFUSED(l, Status::kState, reveal("alice", x, 3, salt_for("alice")));  // commit phase open
  f.now = l.challenge_info(cid).commit_deadline;
  EXPECT_REFUSED(l, Status::kState, reveal("alice", x, 3, salt_for("alice")));  // its last height
  ++f.now;
  EXPECT_REFUSED(l, Status::kNotFound,
                 l.reveal_witness_value(id("alice"), 99, test::replayed_finding(x, 3), salt_for("alice"), f.now));
  EXPECT_REFUSED(l, Status::kNotFound, reveal("carol", x, 3, salt_for("carol")));
  EXPECT_REFUSED(l, Status::kProofMismatch, reveal("alice", d("y"), 3, salt_for("alice")));
  EXPECT_REFUSED(l, Status::kProofMismatch, reveal("alice", x, 4, salt_for("alice")));
  EXPECT_REFUSED(l, Status::kProofMismatch, reveal("alice", x, 3, salt_for("bob")));
  EXPECT_REFUSED(l, Status::kInvalidArgument, reveal("alice", x, 3, Bytes(15)));
  // Bob cannot open Alice's commitment with her salt: identities are bound.
  EXPECT_REFUSED(l, Status::kProofMismatch, reveal("bob", x, 3, salt_for("alice")));
  reveal("alice", x, 3, salt_for("alice"));
  EXPECT_REFUSED(l, Status::kDuplicate, reveal("alice", x, 3, salt_for("alice")));
  f.now = l.challenge_info(cid).reveal_deadline;  // the last height of the phase still counts
  reveal("bob", x, 3, salt_for("bob"));
  EXPECT_EQ(l.challenge_info(cid).witness_reveals, 2u);
}

TEST(Ledger, RevealAfterTheRevealPhaseIsRefused) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  const uint64_t cid = f.challenge();
  f.open(cid);
  f.commit("alice", cid, d("x"));
  f.to_final_phase(cid);
  EXPECT_REFUSED(l, Status::kState, f.reveal("alice", cid, d("x")));
}

TEST(Ledger, NothingIsRevealedOnAnUnopenedChallenge) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  const uint64_t cid = f.challenge();
  f.now = l.challenge_info(cid).opening_deadline + 1;
  EXPECT_REFUSED(l, Status::kState, f.reveal("alice", cid, d("x")));
}

TEST(Ledger, FinalizeChallengeRefusals) {
  Flow f;
  f.seal();
  Ledger &l = f.ledger;
  const uint64_t cid = f.challenge();
  EXPECT_REFUSED(l, Status::kNotFound, l.finalize_challenge(99, f.now));
  EXPECT_REFUSED(l, Status::kState, l.finalize_challenge(cid, f.now));
  f.open(cid);
  // Opened: final after the reveal phase, not the opening phase.
  f.now = l.challenge_info(cid).opening_deadline + 1;
  EXPECT_REFUSED(l, Status::kState, l.finalize_challenge(cid, f.now));
  f.now = l.challenge_info(cid).reveal_deadline;
  EXPECT_REFUSED(l, Status::kState, l.finalize_challenge(cid, f.now));
  ++f.now;
  EXPECT_EQ(l.finalize_challenge(cid, f.now).verdict, Verdict::kInconclusive);
  EXPECT_REFUSED(l, Status::kState, l.finalize_challenge(cid, f.now));
  EXPECT_EQ(status_of([&] { l.run_info(d("no such run")); }), Status::kNotFound);
  EXPECT_EQ(status_of([&] { l.challenge_info(99); }), Status::kNotFound);
}

namespace {

// A ledger with two tasks, three runs, several challenges in every phase and
// both modes. The norm-bucket run reuses the first run's log.
Flow busy_flow() {
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 2));
  f.seal();
  Ledger &l = f.ledger;
  const Bytes theirs = make_commitment(id("miner 2"), f.task_value).encode();
  l.start_training_commitment(id("miner 2"), theirs, f.now);
  const task::Task norm_task = make_task(kNorm, 1, "norm task");
  l.post_task(f.owner, norm_task.encode(), f.now);
  const Bytes norm_miner = id("miner 3");
  const Digest norm_run = l.start_training_commitment(norm_miner, make_commitment(norm_miner, norm_task).encode(), f.now);
  std::vector<commit::StepLeaf> norm_leaves;
  const auto norm_log = Flow::log_of(norm_run, false, &norm_leaves);
  l.post_checkpoint_root(norm_miner, norm_run, kSteps, norm_log->root(), {}, f.now);
  const std::vector<uint64_t> ids = f.drawn(f.issue(), 2);
  // The norm run's drawn round and step 1's certain challenge, both judged.
  const std::vector<uint64_t> norm = l.issue_challenge(norm_run, f.now);
  EXPECT_EQ(norm.size(), 2u);
  f.open(ids[0]);
  for (uint64_t cid : norm) {
    const uint64_t ns = f.step_of(cid);
    l.submit_opening(norm_miner, cid, f.manifest, norm_leaves.at(ns - 1).encode(),
                     merkle::encode_proof(norm_log->inclusion_proof(ns - 1, kSteps)), f.now);
  }
  f.now += 2;
  f.open(ids[1]);  // two blocks into its opening phase
  for (const char *w : {"alice", "bob", "carol"}) {
    f.commit(w, ids[0], Flow::honest_state(f.step_of(ids[0])));
    for (uint64_t cid : norm) f.commit(w, cid, d(w), Flow::kCommittedBucket + 1);
  }
  f.to_reveal_phase(ids[0]);
  for (const char *w : {"alice", "bob", "carol"}) {
    f.reveal(w, ids[0], Flow::honest_state(f.step_of(ids[0])));
    for (uint64_t cid : norm) f.reveal(w, cid, d(w), Flow::kCommittedBucket + 1);
  }
  f.to_final_phase(ids[0]);
  l.finalize_challenge(ids[0], f.now);
  for (uint64_t cid : norm) l.finalize_challenge(cid, f.now);
  // A sealed run waiting to be drawn, its randomness posted and kept.
  const Bytes waiting_miner = id("miner 4");
  const Digest waiting = l.start_training_commitment(waiting_miner, make_commitment(waiting_miner, f.task_value).encode(), f.now);
  l.post_checkpoint_root(waiting_miner, waiting, kSteps, Flow::log_of(waiting)->root(), {}, f.now);
  ++f.now;
  l.post_randomness(Flow::randomness(f.now), f.now);
  return f;
}

Bytes mutated(const Bytes &state, const std::function<void(v2::LedgerState &)> &change) {
  v2::LedgerState p;
  EXPECT_TRUE(p.ParseFromArray(state.data(), static_cast<int>(state.size())));
  change(p);
  const std::string s = p.SerializeAsString();
  return Bytes(s.begin(), s.end());
}

}  // namespace

TEST(Ledger, LoadRefusesTruncatedAndModifiedBytes) {
  Flow f = busy_flow();
  const Bytes s = f.ledger.save();
  expect_round_trip(f.ledger);
  EXPECT_EQ(Ledger::load(s).save(), s);
  // Every proper prefix is refused, except the one that ends after the
  // config (the encoding of a new ledger) and the one that ends after the
  // height (a ledger whose last task was pruned, with no verifier and no
  // randomness: prune_task can leave it).
  const Bytes fresh = Ledger(kConfig).save();
  const Bytes bare = mutated(s, [](v2::LedgerState &p) {
    v2::LedgerState q;
    q.set_format_version(p.format_version());
    *q.mutable_config() = p.config();
    q.set_height(p.height());
    p = q;
  });
  ASSERT_GT(bare.size(), fresh.size());
  EXPECT_EQ(Ledger::load(bare).save(), bare);
  for (size_t n = 0; n < s.size(); ++n) {
    const ByteView prefix = ByteView(s).first(n);
    if (std::ranges::equal(prefix, fresh) || std::ranges::equal(prefix, bare)) continue;
    ASSERT_EQ(status_of([&] { Ledger::load(prefix); }), Status::kMalformed) << "prefix " << n;
  }
  EXPECT_EQ(Ledger::load(ByteView(s).first(fresh.size())).save(), fresh);
  Bytes longer = s;
  longer.push_back(0);
  EXPECT_EQ(status_of([&] { Ledger::load(longer); }), Status::kMalformed);
  Bytes unknown = s;
  unknown.push_back(0x78);  // field 15, varint: parses, but is not canonical
  unknown.push_back(1);
  EXPECT_EQ(status_of([&] { Ledger::load(unknown); }), Status::kMalformed);
  // Any single-bit change is either refused or is another canonical state
  // (a changed manifest digest, say) that saves back to the same bytes.
  size_t refused = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    Bytes m = s;
    m[i] ^= 1;
    try {
      EXPECT_EQ(Ledger::load(m).save(), m) << "byte " << i;
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), Status::kMalformed) << "byte " << i << ": " << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, s.size() / 2);
  EXPECT_EQ(status_of([] { Ledger::load(Bytes(game::kMaxLedgerStateBytes + 1)); }),
            Status::kLimit);
}

TEST(Ledger, LoadRefusesATaskProgramVerdictOnATaskNotMarkedSo) {
  // Two challenges: the first, final with cause task_program, stays in the
  // state while the second is open.
  Flow f(false, kConfig, 100, make_task(task::ChallengeMode::kBitwise, 2));
  f.seal();
  const std::vector<uint64_t> ids = f.drawn(f.issue(), 2);
  f.open(ids[0]);
  const witness::Finding fault = invalid_opening_finding(commit::OpeningCheck::kTaskProgram);
  EXPECT_STREQ(cause_name(f.judge(ids[0], {{"alice", fault}, {"bob", fault}}).cause), "task_program");
  const Bytes s = f.ledger.save();
  EXPECT_TRUE(Ledger::load(s).task_program_fault(f.task));
  const Bytes unmarked = mutated(s, [](v2::LedgerState &p) { p.mutable_tasks(0)->set_program_fault(false); });
  try {
    Ledger::load(unmarked);
    ADD_FAILURE() << "a state whose task lost its program_fault loaded";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kMalformed);
    EXPECT_NE(std::string(e.what()).find("the task is not marked so"), std::string::npos) << e.what();
  }
}

TEST(Ledger, LoadChecksInvariants) {
  Flow f = busy_flow();
  const Bytes s = f.ledger.save();
  auto refused = [&](const char *what, const std::function<void(v2::LedgerState &)> &change) {
    EXPECT_EQ(status_of([&] { Ledger::load(mutated(s, change)); }), Status::kMalformed) << what;
  };
  // The untouched message re-encodes to the same bytes.
  EXPECT_EQ(mutated(s, [](v2::LedgerState &) {}), s);
  refused("version 1", [](auto &p) { p.set_format_version(1); });
  refused("version 2", [](auto &p) { p.set_format_version(2); });  // before disputes
  refused("version 3", [](auto &p) { p.set_format_version(3); });  // before the operator phase
  refused("version 4", [](auto &p) { p.set_format_version(4); });  // before closed runs kept their roots
  refused("version 5", [](auto &p) { p.set_format_version(5); });  // pot 0.2: no balances, no bonds
  refused("version 6", [](auto &p) { p.set_format_version(6); });  // before runs sealed with flagged steps
  refused("version 8", [](auto &p) { p.set_format_version(8); });
  refused("a flagged step 0", [](auto &p) { p.mutable_runs(0)->add_flagged_steps(0); });
  refused("a flagged step past the run", [](auto &p) { p.mutable_runs(0)->add_flagged_steps(1u << 30); });
  refused("a final state on a run of a task with per-run randomness",
          [](auto &p) { p.mutable_runs(0)->set_final_state(std::string(32, 'x')); });
  try {
    Ledger::load(mutated(s, [](auto &p) { p.set_format_version(6); }));
    ADD_FAILURE() << "format 6 loaded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("format 6 sealed runs without their flagged steps"), std::string::npos)
        << e.what();
  }
  try {
    Ledger::load(mutated(s, [](auto &p) { p.set_format_version(4); }));
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("format 4 kept no root of a closed run"), std::string::npos) << e.what();
  }
  try {
    Ledger::load(mutated(s, [](auto &p) { p.set_format_version(5); }));
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("format 5 (pot 0.2) held no balances and no bonds"), std::string::npos)
        << e.what();
  }
  // The bonds (docs/ledger.md 2.18): the sum, the accounts, the bond bounds.
  refused("held off by one", [](auto &p) { p.set_held(p.held() + 1); });
  refused("an account dropped", [](auto &p) { p.mutable_accounts()->RemoveLast(); });
  refused("a zero balance listed", [](auto &p) {
    v2::LedgerAccount *a = p.add_accounts();
    a->set_identity("zzz");
  });
  refused("accounts out of order", [](auto &p) {
    p.mutable_accounts()->SwapElements(0, 1);
  });
  refused("a task bond of 0", [](auto &p) { p.mutable_config()->set_task_bond(0); });
  refused("more tasks than an owner may hold", [](auto &p) { p.mutable_config()->set_max_open_tasks(1); });
  refused("a bond that would pass 2^64 - 1", [](auto &p) { p.mutable_config()->set_miner_bond(UINT64_MAX / 2); });
  refused("no config", [](auto &p) { p.clear_config(); });
  refused("max committee size 0", [](auto &p) { p.mutable_config()->set_max_committee_size(0); });
  refused("max committee size 1025", [](auto &p) { p.mutable_config()->set_max_committee_size(1025); });
  refused("max committee size 7", [](auto &p) { p.mutable_config()->set_max_committee_size(7); });  // tasks ask 8
  refused("min stake above a stake", [](auto &p) { p.mutable_config()->set_min_stake(kStake + 1); });
  refused("window", [](auto &p) { p.mutable_config()->set_reveal_window(100); });  // a final challenge still open
  refused("opening window", [](auto &p) { p.mutable_config()->set_opening_window(1); });  // opened after it
  refused("too few challenges",
          [](auto &p) { p.set_next_challenge_id(p.next_challenge_id() + 1); });
  refused("unissued id", [](auto &p) { p.set_next_challenge_id(1); });
  refused("runs unsorted", [](auto &p) { p.mutable_runs()->SwapElements(0, 1); });
  refused("run twice", [](auto &p) { *p.add_runs() = p.runs(0); });
  refused("run id", [](auto &p) { (*p.mutable_runs(0)->mutable_run_id())[0] ^= 1; });
  refused("short task id", [](auto &p) { p.mutable_tasks(0)->mutable_task_id()->pop_back(); });
  refused("task id", [](auto &p) { (*p.mutable_tasks(0)->mutable_task_id())[0] ^= 1; });
  refused("task", [](auto &p) { p.mutable_tasks(0)->mutable_task()->push_back('\0'); });
  refused("tasks unsorted", [](auto &p) { p.mutable_tasks()->SwapElements(0, 1); });
  refused("task twice", [](auto &p) { *p.add_tasks() = p.tasks(0); });
  refused("a run's task missing", [](auto &p) { p.mutable_tasks()->RemoveLast(); });
  refused("mode not the task's",
          [](auto &p) { p.mutable_challenges(0)->set_mode(v2::LEDGER_MODE_NORM_BUCKET); });
  refused("commitment", [](auto &p) { p.mutable_runs(0)->mutable_commitment()->push_back('\0'); });
  refused("size past the steps", [](auto &p) {
    for (auto &r : *p.mutable_runs()) r.set_latest_size(kSteps + 1);
  });
  refused("root without size", [](auto &p) {
    for (auto &r : *p.mutable_runs())
      if (r.latest_size() == 0) r.set_latest_root(std::string(32, 'r'));
  });
  // The randomness: runs draw from values that were posted, after their
  // seal; the kept values are exactly those a waiting run needs.
  auto drawn_run = [](v2::LedgerState &p) -> v2::LedgerRun & {
    for (auto &r : *p.mutable_runs())
      if (r.has_drawn_from()) return r;
    throw std::logic_error("no drawn run");
  };
  auto unsealed_run = [](v2::LedgerState &p) -> v2::LedgerRun & {
    for (auto &r : *p.mutable_runs())
      if (r.seal_height() == 0) return r;
    throw std::logic_error("no unsealed run");
  };
  ASSERT_EQ(f.ledger.save(), s);
  refused("drawn_from dropped", [&](auto &p) { drawn_run(p).clear_drawn_from(); });
  refused("drawn_from value", [&](auto &p) { *drawn_run(p).mutable_drawn_from()->mutable_value() = std::string(32, 'v'); });
  refused("drawn_from value short", [&](auto &p) { drawn_run(p).mutable_drawn_from()->mutable_value()->pop_back(); });
  refused("drawn before the draw height", [&](auto &p) {
    drawn_run(p).mutable_drawn_from()->set_height(drawn_run(p).seal_height());
  });
  refused("drawn from a height never posted", [&](auto &p) {
    drawn_run(p).mutable_drawn_from()->set_height(p.last_randomness().height() + 1);
  });
  refused("drawn from the latest height, another value", [&](auto &p) {
    drawn_run(p).mutable_drawn_from()->set_height(p.last_randomness().height());
  });
  refused("seal height of an unsealed run", [&](auto &p) { unsealed_run(p).set_seal_height(1); });
  refused("sealed above the height", [&](auto &p) { drawn_run(p).set_seal_height(p.height() + 1); });
  refused("no latest randomness", [](auto &p) { p.clear_last_randomness(); });
  refused("latest randomness above the height",
          [](auto &p) { p.mutable_last_randomness()->set_height(p.height() + 1); });
  refused("latest randomness short", [](auto &p) { p.mutable_last_randomness()->mutable_value()->pop_back(); });
  refused("kept randomness dropped", [](auto &p) { p.clear_randomness(); });
  refused("kept randomness twice", [](auto &p) { *p.add_randomness() = p.randomness(0); });
  refused("kept randomness nobody waits for", [](auto &p) {
    auto *e = p.add_randomness();
    e->set_height(p.randomness(0).height() - 1);
    e->set_value(std::string(32, 'x'));
    p.mutable_randomness()->SwapElements(0, 1);
  });
  refused("kept randomness not the posted value",
          [](auto &p) { (*p.mutable_randomness(0)->mutable_value())[0] ^= 1; });
  refused("challenges unsorted", [](auto &p) { p.mutable_challenges()->SwapElements(0, 1); });
  refused("unknown run", [](auto &p) { (*p.mutable_challenges(0)->mutable_run_id())[0] ^= 1; });
  refused("step 0", [](auto &p) { p.mutable_challenges(0)->set_step(0); });
  refused("step past the run", [](auto &p) { p.mutable_challenges(0)->set_step(kSteps + 1); });
  refused("mode 0",
          [](auto &p) { p.mutable_challenges(0)->set_mode(v2::LEDGER_MODE_UNSPECIFIED); });
  refused("mode 7",
          [](auto &p) { p.mutable_challenges(0)->set_mode(static_cast<v2::LedgerMode>(7)); });
  refused("issued before the draw", [](auto &p) {
    for (auto &c : *p.mutable_challenges()) c.set_issued_height(c.issued_height() - 1);
  });
  refused("issued apart", [](auto &p) { p.mutable_challenges(1)->set_issued_height(p.challenges(1).issued_height() + 1); });
  refused("issued in the future", [](auto &p) {
    for (auto &c : *p.mutable_challenges()) c.set_issued_height(p.height() + 1);
  });
  refused("opened after its opening phase", [](auto &p) {
    auto *o = p.mutable_challenges(0)->mutable_opening();
    o->set_height(p.challenges(0).issued_height() + 11);
  });
  refused("opened before its issue", [](auto &p) {
    auto *o = p.mutable_challenges(0)->mutable_opening();
    o->set_height(p.challenges(0).issued_height() - 1);
  });
  refused("a drawn run's challenge dropped", [](auto &p) {
    p.mutable_challenges()->RemoveLast();
    p.set_next_challenge_id(p.next_challenge_id() - 1);
  });
  refused("another step than the draw's", [](auto &p) {
    auto *c = p.mutable_challenges(1);  // no reveals: only the draw can tell
    c->set_step(c->step() % kSteps + 1);
  });
  refused("norm with its sign bit", [](auto &p) {
    p.mutable_challenges(0)->mutable_opening()->set_update_norm(-1.0);
  });
  refused("commits without an opening", [](auto &p) { p.mutable_challenges(0)->clear_opening(); });
  refused("height without tasks, verifiers or randomness", [](auto &p) {
    p.clear_last_randomness();
    p.clear_randomness();
    p.clear_verifiers();
    p.clear_tasks();
    p.clear_runs();
    p.clear_challenges();
    p.set_next_challenge_id(0);
  });
  // Closed runs and the outcome log: the norm run's two challenges (its
  // drawn round, step 1's) are final, so the run is closed; the bitwise run
  // holds one final challenge and two open ones.
  ASSERT_EQ(Ledger::load(s).outcome_count(), 3u);
  ASSERT_EQ(mutated(s, [](auto &p) { ASSERT_EQ(p.closed_runs_size(), 1); }), s);
  refused("closed run twice", [](auto &p) { *p.add_closed_runs() = p.closed_runs(0); });
  refused("closed run also open", [](auto &p) { p.mutable_closed_runs(0)->set_run_id(p.runs(0).run_id()); });
  refused("closed run id short", [](auto &p) { p.mutable_closed_runs(0)->mutable_run_id()->pop_back(); });
  refused("closed run's task not posted", [](auto &p) { (*p.mutable_closed_runs(0)->mutable_task_id())[0] ^= 1; });
  refused("closed run without a miner", [](auto &p) { p.mutable_closed_runs(0)->clear_miner_identity(); });
  refused("closed run of 0 steps", [](auto &p) { p.mutable_closed_runs(0)->clear_declared_steps(); });
  refused("closed run's root short", [](auto &p) { p.mutable_closed_runs(0)->mutable_root()->pop_back(); });
  refused("closed run without S_0", [](auto &p) { p.mutable_closed_runs(0)->clear_initial_state_digest(); });
  refused("closed run on an open run's key", [](auto &p) {
    const std::string commitment = p.runs(0).commitment();
    auto *c = p.mutable_closed_runs(0);
    // Another run id under the key (task, miner) of open run 0.
    const commit::TrainingCommitment open = commit::TrainingCommitment::decode(
        ByteView(reinterpret_cast<const uint8_t *>(commitment.data()), commitment.size()));
    c->set_task_id(std::string(reinterpret_cast<const char *>(open.task_id.bytes.data()), 32));
    c->set_miner_identity(std::string(open.miner_identity.begin(), open.miner_identity.end()));
  });
  refused("a challenge of a closed run", [](auto &p) {
    p.mutable_challenges(1)->set_run_id(p.closed_runs(0).run_id());
  });
  refused("outcome log dropped", [](auto &p) { p.clear_outcome_log(); });
  refused("outcome log short", [](auto &p) { p.mutable_outcome_log()->pop_back(); });
  refused("outcome log of another size", [](auto &p) {
    merkle::Log log;
    for (int i = 0; i < 4; ++i) log.append_hash(d("leaf"));  // the state's holds 3
    const Bytes b = log.save();
    p.set_outcome_log(std::string(b.begin(), b.end()));
  });
  refused("outcome index past the log", [](auto &p) {
    for (auto &c : *p.mutable_challenges())
      if (c.has_verdict()) c.mutable_verdict()->set_outcome_index(3);
  });
  refused("verifiers unsorted", [](auto &p) { p.mutable_verifiers()->SwapElements(0, 1); });
  refused("verifier twice", [](auto &p) { *p.add_verifiers() = p.verifiers(0); });
  refused("verifier registered above the height",
          [](auto &p) { p.mutable_verifiers(0)->set_registered_height(p.height() + 1); });
  refused("verifier registered after a draw it is in",
          [](auto &p) { p.mutable_verifiers(0)->set_registered_height(p.height()); });
  refused("verifier dropped", [](auto &p) { p.mutable_verifiers()->RemoveLast(); });
  refused("verifier with another stake", [](auto &p) { p.mutable_verifiers(0)->set_stake(kStake + 1); });
  refused("committee member dropped", [](auto &p) { p.mutable_challenges(1)->mutable_committee()->RemoveLast(); });
  refused("committee member's stake", [](auto &p) { p.mutable_challenges(1)->mutable_committee(0)->set_stake(1); });
  refused("committee member twice", [](auto &p) {
    auto *c = p.mutable_challenges(1);
    *c->add_committee() = c->committee(0);
  });
  refused("cluster stake", [](auto &p) { p.mutable_challenges(0)->mutable_verdict()->set_cluster_stake(1); });
  refused("miner as witness", [](auto &p) {
    auto *w = p.mutable_challenges(1)->add_commits();
    w->set_identity("miner");
    w->set_commitment(std::string(32, 'c'));
  });
  refused("reveal without commit",
          [](auto &p) { p.mutable_challenges(0)->mutable_commits()->RemoveLast(); });
  refused("reveal salt",
          [](auto &p) { (*p.mutable_challenges(0)->mutable_reveals(0)->mutable_salt())[0] ^= 1; });
  refused("reveal value",
          [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->set_bucket(9); });
  refused("reveal gradient",
          [](auto &p) { (*p.mutable_challenges(0)->mutable_reveals(0)->mutable_gradient_digest())[0] ^= 1; });
  refused("reveal environment",
          [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->set_intra_op_threads(2); });
  refused("reveal without an environment",
          [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->clear_hardware_class(); });
  refused("reveal kind 0", [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->set_kind(0); });
  refused("reveal kind 4", [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->set_kind(4); });
  // A field the kind does not use is not canonical (save never writes it).
  refused("reveal with a check", [](auto &p) { p.mutable_challenges(0)->mutable_reveals(0)->set_check(15); });
  refused("verdict", [](auto &p) {
    p.mutable_challenges(0)->mutable_verdict()->set_verdict(v2::LEDGER_VERDICT_FAIL);
  });
  refused("cluster size",
          [](auto &p) { p.mutable_challenges(0)->mutable_verdict()->set_cluster_size(2); });
}

TEST(Ledger, JsonCallsMatchTheCppCalls) {
  Flow f;  // the reference: driven through the C++ calls
  f.seal();
  const uint64_t cid = f.challenge();
  f.open(cid);
  const uint64_t step = f.step_of(cid);
  const Digest state = Flow::honest_state(step);
  f.commit("alice", cid, state);
  f.commit("bob", cid, state);
  f.to_reveal_phase(cid);
  f.reveal("alice", cid, state);
  f.reveal("bob", cid, state);
  f.to_final_phase(cid);
  const game::ChallengeVerdict v = f.ledger.finalize_challenge(cid, f.now);

  Flow g;  // the same calls as JSON
  Ledger &l = g.ledger;
  const std::string miner = to_hex(g.miner), run = f.run_id.hex();
  auto call = [&](nlohmann::json j) {
    const nlohmann::json out = l.apply(j);
    EXPECT_EQ(out.at("ok"), true) << j.dump();
    return out;
  };
  uint64_t now = 100;
  EXPECT_EQ(call({{"call", "post_task"}, {"caller", to_hex(g.owner)}, {"now", now}, {"task", to_hex(g.task_bytes)}})
                ["task_id"],
            g.task.hex());
  EXPECT_EQ(call({{"call", "start_training_commitment"},
                  {"caller", miner},
                  {"now", now},
                  {"commitment", to_hex(g.commitment_bytes)}})["run_id"],
            run);
  for (const char *w : {"alice", "bob", "carol"})
    call({{"call", "register_verifier"}, {"caller", to_hex(id(w))}, {"now", now}, {"stake", kStake}});
  uint64_t prev = 0;
  for (uint64_t size : {3, 6, 8}) {
    const nlohmann::json out =
        call({{"call", "post_checkpoint_root"},
              {"caller", miner},
              {"now", now},
              {"run_id", run},
              {"size", size},
              {"root", g.tree->root(size).hex()},
              {"consistency_proof",
               prev ? to_hex(merkle::encode_proof(g.tree->consistency_proof(prev, size))) : ""}});
    EXPECT_EQ(out["latest_size"], size);
    EXPECT_EQ(out["sealed"], size == kSteps);
    prev = size;
    if (size != kSteps) ++now;
  }
  ++now;
  call({{"call", "post_randomness"}, {"now", now}, {"randomness", Flow::randomness(now).hex()}});
  const nlohmann::json issued = call({{"call", "issue_challenge"}, {"now", now}, {"run_id", run}});
  EXPECT_EQ(issued["challenge_ids"], nlohmann::json::array({cid}));
  EXPECT_EQ(issued["steps"], nlohmann::json::array({step}));
  call({{"call", "submit_opening"},
        {"caller", miner},
        {"now", now},
        {"challenge_id", cid},
        {"manifest_digest", g.manifest.hex()},
        {"step_leaf", to_hex(g.leaf_bytes(step))},
        {"leaf_proof", to_hex(g.leaf_proof(step))}});
  for (const char *w : {"alice", "bob"})
    call({{"call", "commit_witness"},
          {"caller", to_hex(id(w))},
          {"now", now},
          {"challenge_id", cid},
          {"commitment", g.witness_digest(w, cid, state, 0).hex()}});
  now += 11;
  for (const char *w : {"alice", "bob"})
    call({{"call", "reveal_witness_value"},
          {"caller", to_hex(id(w))},
          {"now", now},
          {"challenge_id", cid},
          {"kind", "replayed"},
          {"replayed_state", state.hex()},
          {"bucket", 0},
          {"gradient_digest", Digest{}.hex()},
          {"environment", env_json()},
          {"salt", to_hex(salt_for(w))}});
  const nlohmann::json t = call({{"call", "task_info"}, {"task_id", g.task.hex()}});
  EXPECT_EQ(t["task"], g.task_value.to_json());
  EXPECT_EQ(t["task"]["challenge_policy"]["mode"], "bitwise");
  const nlohmann::json r = call({{"call", "run_info"}, {"run_id", run}});
  EXPECT_EQ(r["task_id"], g.task.hex());
  EXPECT_EQ(r["miner_identity"], miner);
  EXPECT_EQ(r["declared_steps"], kSteps);
  EXPECT_EQ(r["latest_root"], g.tree->root().hex());
  EXPECT_EQ(r["sealed"], true);
  EXPECT_EQ(r["seal_height"], 102);
  EXPECT_EQ(r["draw_height"], 103);
  EXPECT_EQ(r["drawn_from"], (nlohmann::json{{"height", 103}, {"value", Flow::randomness(103).hex()}}));
  EXPECT_EQ(r["slashable"], false);
  const nlohmann::json c = call({{"call", "challenge_info"}, {"challenge_id", cid}});
  EXPECT_EQ(c["step"], step);
  EXPECT_EQ(c["mode"], "bitwise");
  EXPECT_EQ(c["issued_height"], 103);
  EXPECT_EQ(c["opening_deadline"], 113);
  EXPECT_EQ(c["opened"], true);
  EXPECT_EQ(c["opened_height"], 103);
  EXPECT_EQ(c["commit_deadline"], 113);
  EXPECT_EQ(c["reveal_deadline"], 123);
  EXPECT_EQ(c["opened_state"], state.hex());
  EXPECT_TRUE(c["committed_bucket"].is_null());  // bitwise mode
  EXPECT_EQ(c["opened_update_norm"], Flow::committed_norm());
  EXPECT_EQ(c["witness_reveals"], 2);
  EXPECT_EQ(c["final"], false);
  EXPECT_TRUE(c["verdict"].is_null());
  EXPECT_TRUE(c["outcome"].is_null());
  now += 10;
  const nlohmann::json fin =
      call({{"call", "finalize_challenge"}, {"now", now}, {"challenge_id", cid}});
  EXPECT_EQ(fin["verdict"], "pass");
  EXPECT_EQ(fin["reason"], v.reason);
  EXPECT_EQ(fin["cluster_size"], 2);
  // Same calls, same state, byte for byte.
  EXPECT_EQ(l.save(), f.ledger.save());

  EXPECT_EQ(fin["cause"], "agreement");
  EXPECT_EQ(fin["outcome"], to_hex(v.outcome.encode()));
  EXPECT_EQ(fin["outcome_index"], 0);
  EXPECT_EQ(fin["outcome_root"], hash::leaf_hash(v.outcome.encode()).hex());
  EXPECT_EQ(fin["run_closed"], true);
  // Closed: the run keeps its key, slashable flag and final root (a
  // dispute may still be opened), the challenge is pruned.
  const nlohmann::json closed = call({{"call", "run_info"}, {"run_id", run}});
  EXPECT_EQ(closed["closed"], true);
  EXPECT_EQ(closed["slashable"], false);
  EXPECT_EQ(closed["miner_identity"], miner);
  EXPECT_EQ(closed["latest_root"], f.tree->root(kSteps).hex());
  EXPECT_EQ(closed["declared_steps"], kSteps);
  EXPECT_TRUE(closed["seal_height"].is_null());
  EXPECT_TRUE(closed["drawn_from"].is_null());
  EXPECT_REFUSED(l, Status::kState, l.apply({{"call", "challenge_info"}, {"challenge_id", cid}}));
  const nlohmann::json info = call({{"call", "ledger_info"}});
  EXPECT_EQ(info["config"], kConfig.to_json());
  EXPECT_EQ(info["height"], now);
  EXPECT_EQ(info["latest_randomness"], r["drawn_from"]);
  EXPECT_EQ(info["outcome_count"], 1);
  EXPECT_EQ(info["outcome_root"], fin["outcome_root"]);
  EXPECT_EQ(info["open_runs"], 0);
  EXPECT_EQ(info["closed_runs"], 1);
  EXPECT_EQ(info["kept_challenges"], 0);

}

TEST(Ledger, JsonCallsAreReadStrictly) {
  Flow f(false, kConfig, 100, make_task(kNorm));
  f.seal();
  const uint64_t cid = f.challenge();
  Ledger &l = f.ledger;
  f.open(cid);
  // A witness committed to the lowest int64 bucket (a sentinel): its reveal
  // as JSON carries the full range.
  f.commit("alice", cid, d("alice replay"), INT64_MIN);
  f.to_reveal_phase(cid);
  const nlohmann::json reveal = {{"call", "reveal_witness_value"},
                                 {"caller", to_hex(id("alice"))},
                                 {"now", f.now},
                                 {"challenge_id", cid},
                                 {"kind", "replayed"},
                                 {"replayed_state", d("alice replay").hex()},
                                 {"bucket", INT64_MIN},
                                 {"gradient_digest", Digest{}.hex()},
                                 {"environment", env_json()},
                                 {"salt", to_hex(salt_for("alice"))}};
  auto with = [&](const char *key, nlohmann::json value) {
    nlohmann::json j = reveal;
    j[key] = std::move(value);
    return j;
  };
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(nlohmann::json::array()));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply({{"now", 1}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("call", "no_such_call")));
  // The call protocol 2 had for a miner's bucket declaration is gone.
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.apply({{"call", "declare_witness_norm_bucket"}, {"caller", to_hex(f.miner)}, {"now", f.now},
                          {"challenge_id", cid}, {"bucket", 3}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("extra", 1)));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("caller", "zz")));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("now", -1)));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("now", 1.5)));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("bucket", "3")));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("bucket", 1.0)));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(with("bucket", uint64_t{1} << 63)));
  nlohmann::json missing = reveal;
  missing.erase("bucket");
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply(missing));
  // The steps come from the chain's randomness: a caller's beacon is no
  // argument, nor is the mode (the task's).
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.apply({{"call", "issue_challenge"}, {"now", f.now}, {"run_id", f.run_id.hex()}, {"beacon", "00"}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.apply({{"call", "issue_challenge"}, {"now", f.now}, {"run_id", f.run_id.hex()}, {"mode", "bitwise"}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.apply({{"call", "post_randomness"}, {"now", f.now}, {"randomness", "00"}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply({{"call", "ledger_info"}, {"now", f.now}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument,
                 l.apply({{"call", "post_task"}, {"caller", to_hex(f.owner)}, {"now", f.now}, {"task", "0g"}}));
  EXPECT_REFUSED(l, Status::kInvalidArgument, l.apply({{"call", "run_info"}, {"run_id", "abc"}}));
  // The ledger's own statuses come through unchanged.
  EXPECT_REFUSED(l, Status::kNotFound, l.apply(with("caller", to_hex(id("mallory")))));
  EXPECT_REFUSED(l, Status::kNotFound, l.apply({{"call", "challenge_info"}, {"challenge_id", 7}}));
  EXPECT_EQ(l.apply(reveal), (nlohmann::json{{"ok", true}}));
  EXPECT_EQ(l.challenge_info(cid).witness_reveals, 1u);
  const nlohmann::json c = l.apply({{"call", "challenge_info"}, {"challenge_id", cid}});
  EXPECT_EQ(c["committed_bucket"], Flow::kCommittedBucket);
  EXPECT_EQ(c["opened_update_norm"], Flow::committed_norm());
}

// Attack 7 of the challenge game (docs/security.md section 6.1): history
// must not fill the state. A million challenges are issued and finalized
// (no opening: FAIL, each naming its silent committee); the saved state
// holds the open work, the outcome log's border (at most 64 hashes) and a
// closed run's key per run, never a final challenge of a closed run.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define POT_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define POT_TEST_SANITIZED 1
#endif
TEST(Ledger, AMillionFinalizedChallengesStayUnderTheCap) {
  constexpr uint32_t kRounds = 8;
  constexpr uint64_t kRunsPerBatch = 2500;
#ifdef POT_TEST_SANITIZED
  // The same calls, a tenth of them: under ASan the million take 200 s of
  // CI; the release build's ctest runs them all (8 s).
  constexpr uint64_t kBatches = 5;
#else
  constexpr uint64_t kBatches = 50;  // 50 * 2500 runs * 8 rounds = 10^6 challenges
#endif
  const LedgerConfig config{.draw_delay = 1,
                            .opening_window = 1,
                            .commit_window = 1,
                            .reveal_window = 1,
                            .max_committee_size = 3,
                            .min_stake = 1,
                            .max_rounds = kRounds,
                            .max_attempts = 1,
                           .referee = {}};
  Ledger l(config);
  uint64_t now = 1;
  for (const char *w : {"alice", "bob", "carol", "dave"}) l.register_verifier(id(w), kStake, now);
  const size_t empty_bytes = l.save().size();  // the verifiers and the height
  uint64_t finalized = 0;
  size_t largest = 0;  // the most the state held, and when
  uint64_t largest_batch = 0;
  for (uint64_t batch = 0; batch < kBatches; ++batch) {
    // Each batch is a task: its runs register and seal at one height, its
    // end, and once they are judged it is pruned.
    ++now;
    const task::Task t =
        test::test_task("batch " + std::to_string(batch), kSteps, task::ChallengeMode::kBitwise, kRounds, "owner", 3, now);
    l.deposit(t.owner, config.task_bond, now);
    const Digest task_id = l.post_task(t.owner, t.encode(), now);
    std::vector<Digest> runs;
    for (uint64_t i = 0; i < kRunsPerBatch; ++i) {
      const Bytes miner = id("miner " + std::to_string(batch * kRunsPerBatch + i));
      l.deposit(miner, config.miner_bond, now);  // burned by the FAIL below
      const Digest run = l.start_training_commitment(miner, make_commitment(miner, t).encode(), now);
      l.post_checkpoint_root(miner, run, kSteps, d("root"), {}, now);  // sealed
      runs.push_back(run);
    }
    ++now;
    l.post_randomness(Flow::randomness(now), now);
    std::vector<uint64_t> ids;
    for (const Digest &run : runs)
      for (uint64_t cid : l.issue_challenge(run, now)) ids.push_back(cid);
    if (const size_t open = l.save().size(); open > largest) largest = open, largest_batch = batch;
    now += config.opening_window + 1;
    for (uint64_t cid : ids) {
      const game::ChallengeVerdict v = l.finalize_challenge(cid, now);
      ASSERT_EQ(v.verdict, Verdict::kFail);
      ASSERT_EQ(v.outcome_index, finalized++);
    }
    if (const size_t closed = l.save().size(); closed > largest) largest = closed, largest_batch = batch;
    const game::PrunedTask p = l.prune_task(task_id, now);
    ASSERT_EQ(p.closed_runs, kRunsPerBatch);
    ASSERT_EQ(p.void_runs, 0u);
  }
  EXPECT_EQ(finalized, kBatches * kRunsPerBatch * kRounds);
  EXPECT_EQ(l.outcome_count(), finalized);
  const Bytes s = l.save();
  // What is left is what open work needs (the verifiers) and the outcome
  // log's border: popcount(10^6) = 7 hashes (popcount(10^5) = 6), plus
  // the height and the challenge counter, and the bonds' ends: the owner's
  // balance (its task bonds came back) and the burned total (every miner's
  // bond). History leaves nothing else.
  EXPECT_LT(s.size(), empty_bytes + 7 * 32 + 64 + 24);
  EXPECT_EQ(l.summary().burned, kBatches * kRunsPerBatch * config.miner_bond);
  EXPECT_EQ(l.account_info(id("owner")), (bond::Balance{kBatches * config.task_bond, 0}));
  // The most it held is one batch's open work: a batch is 2500 runs of 8
  // challenges, whatever came before.
  EXPECT_LT(largest, game::kMaxLedgerStateBytes / 4);
  const Ledger back = Ledger::load(s);
  EXPECT_EQ(back.outcome_root(), l.outcome_root());
  EXPECT_EQ(back.save(), s);
  std::printf("[ figures  ] %llu challenges finalized: state %zu bytes (verifiers only %zu); the most it held: %zu "
              "bytes (batch %llu: 2500 runs x 8 challenges open)\n",
              static_cast<unsigned long long>(finalized), s.size(), empty_bytes, largest,
              static_cast<unsigned long long>(largest_batch));
}

// A task ends: no run registers or seals after its end_height, and once
// none of its runs is open anyone may prune it with its closed and void
// runs. The attacks: a miner that registers (or finishes) after the end, a
// griefer that prunes a task whose sealed run still waits for its verdict
// (the miner would lose its challenges), and a miner whose run was judged
// registering it again once the task is gone (paid twice).
TEST(Ledger, AnEndedTaskIsPrunedWithItsRuns) {
  constexpr uint64_t kEnd = 110;
  Flow f(false, kConfig, 100, test::test_task("ending", kSteps, task::ChallengeMode::kBitwise, 1, "owner", 8, kEnd));
  Ledger &l = f.ledger;
  f.start();
  // A second miner that never finishes, a third that seals at the end.
  const Bytes idle = id("idle miner"), late = id("late miner");
  const Bytes idle_commitment = make_commitment(idle, f.task_value).encode();
  const Digest idle_run = l.start_training_commitment(idle, idle_commitment, f.now);
  l.post_checkpoint_root(idle, idle_run, 3, f.tree->root(3), {}, f.now);
  const Digest late_run = l.start_training_commitment(late, make_commitment(late, f.task_value).encode(), f.now);
  f.post(3);
  ++f.now;
  f.post(kSteps);
  const uint64_t cid = f.challenge();
  const uint64_t one = f.step_1_challenge();
  f.open(cid);
  if (one != cid) f.open(one);

  // Sealing at exactly the end is in time; a root or a run after it is not.
  f.now = kEnd;
  l.post_checkpoint_root(late, late_run, kSteps, d("late root"), {}, f.now);
  f.now = kEnd + 1;
  EXPECT_REFUSED(l, Status::kState, l.post_checkpoint_root(idle, idle_run, 6, f.tree->root(6), Bytes(32), f.now));
  const Bytes newcomer = id("newcomer");
  EXPECT_REFUSED(l, Status::kState,
                 l.start_training_commitment(newcomer, make_commitment(newcomer, f.task_value).encode(), f.now));
  // Even the posted task is refused now (the no-op of an accepted repeat
  // would claim the task still takes runs).
  EXPECT_REFUSED(l, Status::kState, l.post_task(f.owner, f.task_bytes, f.now));

  // Not before the end, and not while a sealed run waits for its verdict.
  EXPECT_REFUSED(l, Status::kState, l.prune_task(f.task, kEnd));
  EXPECT_REFUSED(l, Status::kState, l.prune_task(f.task, f.now));
  ASSERT_EQ(f.judge(cid, {}).verdict, Verdict::kInconclusive);  // nobody witnessed: no committee stake counted
  if (one != cid) {
    EXPECT_FALSE(l.run_info(f.run_id).closed);
    ASSERT_EQ(l.finalize_challenge(one, f.now).verdict, Verdict::kInconclusive);
  }
  EXPECT_TRUE(l.run_info(f.run_id).closed);
  EXPECT_REFUSED(l, Status::kState, l.prune_task(f.task, f.now));  // the late run is sealed, not drawn yet
  const std::vector<uint64_t> late_ids = [&] {
    l.post_randomness(Flow::randomness(f.now), f.now);
    return l.issue_challenge(late_run, f.now);
  }();
  f.now = l.challenge_info(late_ids.at(0)).opening_deadline + 1;
  for (uint64_t late_cid : late_ids)
    EXPECT_EQ(l.finalize_challenge(late_cid, f.now).verdict, Verdict::kFail);  // never opened
  EXPECT_TRUE(l.run_info(late_run).slashable);

  EXPECT_REFUSED(l, Status::kNotFound, l.prune_task(d("no such task"), f.now));
  const uint64_t outcomes = l.outcome_count();
  const Digest outcome_root = l.outcome_root();
  const game::PrunedTask p = l.prune_task(f.task, f.now);
  EXPECT_EQ(p.closed_runs, 2u);
  EXPECT_EQ(p.void_runs, 1u);
  // The bonds: the task's and the unslashed runs' (the judged and the idle
  // one) go back; the late run's FAIL burned its miner's.
  EXPECT_EQ(p.released, kConfig.task_bond + 2 * kConfig.miner_bond);
  EXPECT_EQ(l.account_info(f.owner), (bond::Balance{test::kFunds, 0}));
  EXPECT_EQ(l.account_info(idle), (bond::Balance{test::kFunds, 0}));
  EXPECT_EQ(l.account_info(late), (bond::Balance{test::kFunds - kConfig.miner_bond, 0}));
  EXPECT_EQ(l.summary().burned, kConfig.miner_bond);
  EXPECT_EQ(l.height(), f.now);
  for (const Digest &run : {f.run_id, idle_run, late_run})
    EXPECT_EQ(status_of([&] { l.run_info(run); }), Status::kNotFound);
  EXPECT_EQ(status_of([&] { l.task_info(f.task); }), Status::kNotFound);
  EXPECT_EQ(status_of([&] { l.challenge_info(cid); }), Status::kState);  // pruned, in the log
  EXPECT_EQ(l.outcome_count(), outcomes);
  EXPECT_EQ(l.outcome_root(), outcome_root);
  // The judged run cannot come back: its task is gone and cannot be posted
  // again, since its end has passed.
  EXPECT_REFUSED(l, Status::kNotFound, l.start_training_commitment(f.miner, f.commitment_bytes, f.now));
  EXPECT_REFUSED(l, Status::kState, l.post_task(f.owner, f.task_bytes, f.now));
  EXPECT_REFUSED(l, Status::kNotFound, l.prune_task(f.task, f.now));
  expect_round_trip(l);
  // What is left is what the verifiers and the log need.
  const std::string j = l.apply({{"call", "ledger_info"}}).dump();
  EXPECT_NE(j.find(R"("tasks":0)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("closed_runs":0)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("open_runs":0)"), std::string::npos) << j;

  // A ledger whose only task was pruned keeps its height.
  Ledger bare(kConfig);
  bare.deposit(f.owner, kConfig.task_bond, 5);
  bare.post_task(f.owner, f.task_bytes, 5);
  EXPECT_EQ(bare.prune_task(f.task, kEnd + 1).closed_runs, 0u);
  expect_round_trip(bare);
  EXPECT_EQ(Ledger::load(bare.save()).height(), kEnd + 1);
}

TEST(Ledger, LoadRefusesARunSealedAfterItsTasksEnd) {
  constexpr uint64_t kEnd = 104;
  Flow f(false, kConfig, 100, test::test_task("ending", kSteps, task::ChallengeMode::kBitwise, 1, "owner", 8, kEnd));
  f.seal();  // at 102
  f.ledger.register_verifier(id("dave"), kStake, kEnd + 2);
  const Bytes s = f.ledger.save();
  ASSERT_EQ(Ledger::load(s).save(), s);
  const Bytes moved = mutated(s, [](v2::LedgerState &p) { p.mutable_runs(0)->set_seal_height(kEnd + 1); });
  try {
    Ledger::load(moved);
    ADD_FAILURE() << "loaded a run sealed after its task's end";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kMalformed);
    EXPECT_NE(std::string(e.what()).find("end_height"), std::string::npos) << e.what();
  }
}

// A committee that cannot reach a majority for want of participation is
// replaced: the attack is a coalition of committee members who stay silent
// on a forged step so that it ends INCONCLUSIVE instead of FAIL. The
// challenge is re-run with a committee drawn from later randomness, without
// the silent members, and the new committee fails the step.
TEST(Ledger, ASilentCoalitionIsReplacedAndTheForgedStepFails) {
  LedgerConfig config = kConfig;
  config.max_attempts = 3;
  Flow f(/*forged=*/true, config, 100, make_task(task::ChallengeMode::kBitwise, 1, "task", 3));
  f.verifiers = {"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8"};
  f.seal();
  const uint64_t cid = f.challenge();
  const uint64_t step = f.step_of(cid);
  f.open(cid);
  game::ChallengeInfo c = f.ledger.challenge_info(cid);
  ASSERT_EQ(c.committee.size(), 3u);
  EXPECT_EQ(c.attempt, 1u);
  // One honest member reveals; the other two, the coalition, commit and go
  // silent: 10 of 30 counted, too few to decide.
  const std::string honest(c.committee[0].identity.begin(), c.committee[0].identity.end());
  std::vector<Bytes> silent;
  for (size_t i = 1; i < 3; ++i) {
    const std::string w(c.committee[i].identity.begin(), c.committee[i].identity.end());
    f.commit(w, cid, f.leaves[step - 1].state_digest);
    silent.push_back(c.committee[i].identity);
  }
  const game::ChallengeVerdict first = f.judge(cid, {{honest, test::replayed_finding(Flow::honest_state(step))}});
  EXPECT_EQ(first.verdict, Verdict::kInconclusive);
  EXPECT_EQ(first.cause, game::Cause::kParticipation);
  EXPECT_TRUE(first.rerun);
  EXPECT_EQ(first.silent, silent);
  EXPECT_EQ(first.outcome.attempt, 1u);
  EXPECT_EQ(first.outcome_index, 0u);
  EXPECT_EQ(f.ledger.outcome_count(), 1u);
  // Not final: it awaits a committee drawn from randomness posted after the
  // finalization, so nobody knew the new committee when the old one failed.
  c = f.ledger.challenge_info(cid);
  EXPECT_FALSE(c.verdict);
  EXPECT_TRUE(c.committee.empty());
  ASSERT_TRUE(c.awaiting_redraw_from);
  EXPECT_EQ(*c.awaiting_redraw_from, f.now + config.draw_delay);
  EXPECT_EQ(c.excluded, silent);
  EXPECT_FALSE(f.ledger.run_info(f.run_id).closed);
  expect_round_trip(f.ledger);
  EXPECT_REFUSED(f.ledger, Status::kState, f.commit(honest, cid, Flow::honest_state(step)));
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.finalize_challenge(cid, f.now));
  {
    // States the calls cannot reach while a challenge awaits a committee.
    const Bytes st = f.ledger.save();
    auto refused = [&](const char *what, const std::function<void(v2::LedgerState &)> &change) {
      EXPECT_EQ(status_of([&] { Ledger::load(mutated(st, change)); }), Status::kMalformed) << what;
    };
    refused("awaiting with a committee", [&](auto &p) { *p.mutable_challenges(0)->add_committee() = {}; });
    refused("awaiting past max_attempts", [](auto &p) {
      p.mutable_challenges(0)->set_redraws(2);
    });
    refused("awaiting before the reveal phase closed",
            [](auto &p) { p.mutable_challenges(0)->set_awaiting_redraw_from(p.challenges(0).awaiting_redraw_from() - 2); });
    refused("awaiting after the height",
            [](auto &p) { p.mutable_challenges(0)->set_awaiting_redraw_from(p.height() + 2); });
    refused("excluded twice", [](auto &p) { p.mutable_challenges(0)->add_excluded(p.challenges(0).excluded(0)); });
    refused("excluded unsorted", [](auto &p) { p.mutable_challenges(0)->mutable_excluded()->SwapElements(0, 1); });
    refused("excluded without a re-run", [](auto &p) { p.mutable_challenges(0)->clear_awaiting_redraw_from(); });
    refused("a redraw without its randomness", [](auto &p) {
      p.mutable_challenges(0)->clear_awaiting_redraw_from();
      p.mutable_challenges(0)->set_redraws(1);
    });
    refused("the attempt's record dropped from the log", [](auto &p) { p.clear_outcome_log(); });
    refused("max_attempts 17", [](auto &p) { p.mutable_config()->set_max_attempts(17); });
  }
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.redraw_committee(cid, f.now));  // no randomness yet
  f.ledger.post_randomness(Flow::randomness(f.now), f.now);  // the finalizing block's: too early
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.redraw_committee(cid, f.now));
  f.now += config.draw_delay;
  f.ledger.post_randomness(Flow::randomness(f.now), f.now);
  expect_round_trip(f.ledger);  // the value is kept for the waiting challenge
  f.now += 2;                   // anyone may redraw, any time later
  f.ledger.redraw_committee(cid, f.now);
  EXPECT_REFUSED(f.ledger, Status::kState, f.ledger.redraw_committee(cid, f.now));
  {
    const Bytes st = f.ledger.save();
    auto refused = [&](const char *what, const std::function<void(v2::LedgerState &)> &change) {
      EXPECT_EQ(status_of([&] { Ledger::load(mutated(st, change)); }), Status::kMalformed) << what;
    };
    refused("a redrawn committee that is not the draw", [](auto &p) {
      (*p.mutable_challenges(0)->mutable_redrawn_from()->mutable_value())[0] ^= 1;
    });
    // Dropping an excluded member puts it back among the candidates: the
    // stored committee is then not the draw (checked by the message).
    try {
      Ledger::load(mutated(st, [](auto &p) { p.mutable_challenges(0)->mutable_excluded()->RemoveLast(); }));
      ADD_FAILURE() << "an excluded member dropped was accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), Status::kMalformed);
      EXPECT_NE(std::string(e.what()).find("not the draw of its randomness"), std::string::npos) << e.what();
    }
    refused("a redraw before its randomness",
            [](auto &p) { p.mutable_challenges(0)->set_redrawn_height(p.challenges(0).redrawn_from().height() - 1); });
    refused("redrawn above the height", [](auto &p) { p.mutable_challenges(0)->set_redrawn_height(p.height() + 1); });
    refused("the first committee's draw claimed as a redraw", [](auto &p) { p.mutable_challenges(0)->set_redraws(0); });
  }
  c = f.ledger.challenge_info(cid);
  EXPECT_EQ(c.attempt, 2u);
  EXPECT_FALSE(c.awaiting_redraw_from);
  ASSERT_TRUE(c.redrawn_from);
  EXPECT_EQ(c.redrawn_from->height, f.now - 2);
  EXPECT_EQ(c.commit_deadline, f.now + config.commit_window);
  ASSERT_EQ(c.committee.size(), 3u);
  for (const game::MemberInfo &m : c.committee) {
    EXPECT_FALSE(std::ranges::count(silent, m.identity)) << "a silent member was drawn again";
    EXPECT_NE(m.identity, f.miner);
  }
  expect_round_trip(f.ledger);
  // The new committee replays honestly: the forged step fails.
  std::vector<std::pair<std::string, witness::Finding>> honest_members;
  for (const game::MemberInfo &m : c.committee)
    honest_members.emplace_back(std::string(m.identity.begin(), m.identity.end()),
                                test::replayed_finding(Flow::honest_state(step)));
  const game::ChallengeVerdict second = f.judge(cid, honest_members);
  EXPECT_EQ(second.verdict, Verdict::kFail);
  EXPECT_EQ(second.cause, game::Cause::kBlame);
  EXPECT_FALSE(second.rerun);
  EXPECT_EQ(second.outcome.attempt, 2u);
  EXPECT_EQ(second.outcome_index, 1u);
  // Step 1's certain challenge (the draw missed it), never opened, fails too.
  const uint64_t one = f.step_1_challenge();
  ASSERT_NE(one, cid);
  EXPECT_FALSE(f.ledger.run_info(f.run_id).closed);
  const game::ChallengeVerdict third = f.ledger.finalize_challenge(one, f.now);
  EXPECT_EQ(third.verdict, Verdict::kFail);
  const game::RunInfo r = f.ledger.run_info(f.run_id);
  EXPECT_TRUE(r.closed);
  EXPECT_TRUE(r.slashable);
  EXPECT_EQ(f.ledger.outcome_root(),
            hash::node_hash(hash::node_hash(hash::leaf_hash(first.outcome.encode()),
                                            hash::leaf_hash(second.outcome.encode())),
                            hash::leaf_hash(third.outcome.encode())));
  expect_round_trip(f.ledger);
}

// The attempts are bounded: with max_attempts 2 the second participation
// failure is final INCONCLUSIVE; with max_attempts 1 (no re-run) the first.
TEST(Ledger, ReRunsAreBoundedByMaxAttempts) {
  for (const uint32_t attempts : {1u, 2u}) {
    LedgerConfig config = kConfig;
    config.max_attempts = attempts;
    Flow f(false, config);
    f.seal();
    const uint64_t cid = f.challenge();
    f.open(cid);
    for (uint32_t a = 1; a <= attempts; ++a) {
      const game::ChallengeVerdict v = f.judge(cid, {});  // nobody reveals
      EXPECT_EQ(v.cause, game::Cause::kParticipation);
      EXPECT_EQ(v.rerun, a < attempts);
      EXPECT_EQ(v.outcome.attempt, a);
      if (!v.rerun) break;
      f.now += config.draw_delay;
      f.ledger.post_randomness(Flow::randomness(f.now), f.now);
      f.ledger.redraw_committee(cid, f.now);
      // Every member was silent, so nobody is left to draw.
      EXPECT_TRUE(f.ledger.challenge_info(cid).committee.empty());
      expect_round_trip(f.ledger);
      const game::ChallengeVerdict none = f.judge(cid, {});
      EXPECT_EQ(none.cause, game::Cause::kNoCommittee);  // final: nobody left
      EXPECT_FALSE(none.rerun);
      break;
    }
    EXPECT_TRUE(f.ledger.run_info(f.run_id).closed);
    EXPECT_EQ(f.ledger.outcome_count(), attempts);
    expect_round_trip(f.ledger);
  }
}

// Outcome records (docs/PROTOCOL.md 20.1) are strict: each broken rule is
// refused by name, and a decoded record re-encodes to its bytes.
TEST(Outcome, RoundTripsAndRefusesBrokenRecords) {
  game::Outcome o;
  o.challenge_id = 7;
  o.attempt = 2;
  o.run_id = d("run");
  o.step = 3;
  o.mode = Mode::kNormBucket;
  o.verdict = Verdict::kPass;
  o.cause = game::Cause::kAgreement;
  o.cluster_size = 2;
  o.cluster_stake = 30;
  o.committee_stake = 45;
  o.minority = {id("dave")};
  o.silent = {id("alice"), id("bob")};
  o.misconfigured = {id("erin")};
  const Bytes b = o.encode();
  ASSERT_EQ(b.size(), 110u + 4 * 4 + 4 + 5 + 3 + 4);  // identities 4 + 5 + 3 + 4 bytes, each with its length
  EXPECT_EQ(game::Outcome::decode(b), o);
  EXPECT_EQ(game::Outcome::decode(b).to_json()["silent"], (nlohmann::json{to_hex(id("alice")), to_hex(id("bob"))}));
  auto refused = [&](const char *what, const Bytes &bad, const char *message, Status want = Status::kMalformed) {
    try {
      (void)game::Outcome::decode(bad);
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), want) << what;
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << what << ": " << e.what();
    }
  };
  auto with = [&](size_t at, uint8_t v) {
    Bytes c = b;
    c[at] = v;
    return c;
  };
  auto changed = [&](const std::function<void(game::Outcome &)> &f) {
    game::Outcome c = o;
    f(c);
    return c.encode();
  };
  Bytes longer = b;
  longer.push_back(0);
  refused("a trailing byte", longer, "bytes after the last list");
  refused("truncated", Bytes(b.begin(), b.end() - 1), "needs");
  refused("another version", with(6, '1'), "this SDK reads 'pot/v2/outcome'");
  refused("another tag", with(1, 'q'), "does not start with the tag");
  refused("attempt 0", changed([](auto &c) { c.attempt = 0; }), "attempt 0");
  refused("mode 3", with(15 + 8 + 4 + 32 + 8, 3), "mode 3");
  refused("verdict 4", with(15 + 8 + 4 + 32 + 8 + 1, 4), "verdict 4");
  refused("a FAIL cause on a PASS", changed([](auto &c) { c.cause = game::Cause::kBlame; }), "is not one of verdict");
  refused("step 0", changed([](auto &c) { c.step = 0; }), "step 0");
  refused("a cluster above the committee", changed([](auto &c) { c.cluster_stake = 46; }), "above committee_stake");
  refused("unsorted", changed([](auto &c) { std::swap(c.silent[0], c.silent[1]); }), "not sorted");
  refused("a repeat", changed([](auto &c) { c.silent[1] = c.silent[0]; }), "not sorted");
  refused("one member in two lists", changed([](auto &c) { c.unreplayed = {id("alice")}; }), "another list names");
  refused("an empty identity", changed([](auto &c) { c.minority = {Bytes{}}; }), "expected 1..256");
  refused("a long identity", changed([](auto &c) { c.unreplayed = {Bytes(257, 'x')}; }), "expected 1..256");
  refused("a minority on INCONCLUSIVE", changed([](auto &c) {
            c.verdict = Verdict::kInconclusive;
            c.cause = game::Cause::kSplit;
          }),
          "no minority");
  // A committee finding the task's program at fault decided: its minority is recorded.
  game::Outcome task_fault = o;
  task_fault.verdict = Verdict::kInconclusive;
  task_fault.cause = game::Cause::kTaskProgram;
  EXPECT_EQ(game::Outcome::decode(task_fault.encode()).encode(), task_fault.encode());
  EXPECT_STREQ(game::cause_name(game::Outcome::decode(task_fault.encode()).cause), "task_program");
  Bytes huge_count = b;
  huge_count[94 + 3] = 0x7f;  // the high byte of the minority's count (after 94 fixed bytes)
  refused("a count the bytes cannot hold", huge_count, "more than the bytes or a committee hold");
  refused("past the limit", Bytes(game::kMaxOutcomeBytes + 1), "limit", Status::kLimit);
}
