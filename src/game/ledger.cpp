#include "game/ledger.h"

#include "codec/canonical.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "challenge/challenge.h"
#include "codec/json_fields.h"
#include "commit/step_leaf.h"
#include "common/error.h"
#include "game/ledger_util.h"
#include "hash/rfc6962.h"
#include "merkle/proof.h"
#include "pot/v2/ledger.pb.h"
#include "witness/norm_bucket.h"

namespace pot::game {

using hash::Digest;
using witness::Kind;
using witness::verify_reveal;
using namespace ledger_util;

namespace {

constexpr uint32_t kStateFormatVersion = 5;

const char *verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInconclusive:
      return "inconclusive";
  }
  return "unknown";
}

}  // namespace

void LedgerConfig::validate() const {
  auto need = [](uint64_t v, const char *name) {
    if (v == 0) fail(Status::kInvalidArgument, "ledger config: {} must be at least 1", name);
  };
  need(draw_delay, "draw_delay");
  need(opening_window, "opening_window");
  need(commit_window, "commit_window");
  need(reveal_window, "reveal_window");
  need(max_committee_size, "max_committee_size");
  need(min_stake, "min_stake");
  need(max_rounds, "max_rounds");
  need(max_attempts, "max_attempts");
  if (max_attempts > kMaxAttempts)
    fail(Status::kInvalidArgument, "ledger config: max_attempts {} is above the limit of {}", max_attempts,
         kMaxAttempts);
  if (max_committee_size > kMaxCommitteeSize)
    fail(Status::kInvalidArgument, "ledger config: max_committee_size {} is above the limit of {}", max_committee_size,
         kMaxCommitteeSize);
  need(dispute_window, "dispute_window");
  if (dispute_arity < dispute::kMinArity || dispute_arity > dispute::kMaxArity)
    fail(Status::kInvalidArgument, "ledger config: dispute_arity {} is outside {}..{}", dispute_arity,
         dispute::kMinArity, dispute::kMaxArity);
  if (referee.size() > witness::kMaxIdentity)
    fail(Status::kInvalidArgument, "ledger config: a referee of {} bytes (at most {})", referee.size(),
         witness::kMaxIdentity);
}

LedgerConfig LedgerConfig::from_json(const nlohmann::json &j) {
  const codec::JsonFields f(j, "ledger config");
  f.only({"draw_delay", "opening_window", "commit_window", "reveal_window", "max_committee_size", "min_stake",
          "max_rounds", "max_attempts", "dispute_window", "dispute_arity", "referee"});
  LedgerConfig c;
  c.draw_delay = f.u64("draw_delay");
  c.opening_window = f.u64("opening_window");
  c.commit_window = f.u64("commit_window");
  c.reveal_window = f.u64("reveal_window");
  c.max_committee_size = f.u32("max_committee_size");
  c.min_stake = f.u64("min_stake");
  c.max_rounds = f.u32("max_rounds");
  c.max_attempts = f.u32("max_attempts");
  c.dispute_window = f.u64("dispute_window");
  c.dispute_arity = f.u32("dispute_arity");
  if (f.has("referee")) {
    c.referee = f.hex("referee");
    if (c.referee.empty())
      fail(Status::kInvalidArgument, "{}: an empty referee (leave the key out for none)", f.path("referee"));
  }
  c.validate();
  return c;
}

nlohmann::json LedgerConfig::to_json() const {
  nlohmann::json j = {{"draw_delay", draw_delay},         {"opening_window", opening_window},
                      {"commit_window", commit_window},   {"reveal_window", reveal_window},
                      {"max_committee_size", max_committee_size}, {"min_stake", min_stake},
                      {"max_rounds", max_rounds},         {"max_attempts", max_attempts},
                      {"dispute_window", dispute_window}, {"dispute_arity", dispute_arity}};
  if (!referee.empty()) j["referee"] = to_hex(referee);
  return j;
}

Ledger::Ledger(const LedgerConfig &config) : config_(config) { config_.validate(); }

// Checks run in a fixed order in every call, and no call writes anything
// before its last check has passed, so a refused call leaves the state
// untouched. Where a call inserts into more than one container, the new
// nodes are built in temporary maps and spliced in with merge(), which does
// not allocate, so even an allocation failure cannot leave half a change.

void Ledger::check_now(uint64_t now) const {
  if (now < height_)
    fail(Status::kInvalidArgument,
         "ledger: now = {} is below the ledger's height {}; time does not go back", now, height_);
}

void Ledger::check_not_ended(const task::Task &t, const Digest &task_id, uint64_t now, const char *call) {
  if (now > t.end_height)
    fail(Status::kState, "{}: task {} ended at height {} (its end_height): its runs register and seal by then", call,
         task_id.hex(), t.end_height);
}

void Ledger::check_not_awaiting(const Challenge &c, uint64_t challenge_id, const char *call) {
  if (c.awaiting)
    fail(Status::kState, "{}: challenge {} awaits a new committee (redraw_committee)", call, challenge_id);
}

void Ledger::stop_waiting(uint64_t from) noexcept {
  auto w = waiting_.find(from);
  if (--w->second == 0) waiting_.erase(w);
}

Ledger::Run &Ledger::run_for(const Digest &run_id, const char *call) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    if (closed_.contains(run_id))
      fail(Status::kState, "{}: run {} is closed: its challenges are final and pruned", call, run_id.hex());
    fail(Status::kNotFound, "{}: no run {}", call, run_id.hex());
  }
  return it->second;
}

Ledger::Challenge &Ledger::challenge_for(uint64_t id, const char *call) {
  return const_cast<Challenge &>(std::as_const(*this).challenge_for(id, call));
}

const Ledger::Challenge &Ledger::challenge_for(uint64_t id, const char *call) const {
  auto it = challenges_.find(id);
  if (it == challenges_.end()) {
    if (id < next_challenge_id_)
      fail(Status::kState,
           "{}: challenge {} is final and pruned with its closed run; its outcome record is in the outcome log",
           call, id);
    fail(Status::kNotFound, "{}: no challenge {}", call, id);
  }
  return it->second;
}

Digest Ledger::post_task(ByteView caller, ByteView task, uint64_t now) {
  constexpr const char *kCall = "post_task";
  check_now(now);
  check_caller(caller, kCall);
  task::Task t = task::Task::decode(task);
  if (!same(caller, t.owner))
    fail(Status::kPermission, "{}: the caller is not the task's owner {}", kCall, to_hex(t.owner));
  if (t.challenge_rounds > config_.max_rounds)
    fail(Status::kInvalidArgument, "{}: the task asks for {} challenge rounds, this ledger allows at most {}",
         kCall, t.challenge_rounds, config_.max_rounds);
  if (t.committee_size > config_.max_committee_size)
    fail(Status::kInvalidArgument, "{}: the task asks for committees of {}, this ledger allows at most {}", kCall,
         t.committee_size, config_.max_committee_size);
  const Digest id = t.id();
  check_not_ended(t, id, now, kCall);
  // The id is the digest of the canonical bytes: an existing id holds these
  // very bytes, and posting them again changes nothing.
  if (!tasks_.contains(id)) {
    std::map<Digest, TaskRecord> node;
    node.emplace(id, TaskRecord{to_bytes(task), std::move(t)});
    tasks_.merge(node);
  }
  height_ = now;
  return id;
}

Digest Ledger::start_training_commitment(ByteView caller, ByteView commitment, uint64_t now) {
  constexpr const char *kCall = "start_training_commitment";
  check_now(now);
  check_caller(caller, kCall);
  commit::TrainingCommitment c = commit::TrainingCommitment::decode(commitment);
  if (!same(caller, c.miner_identity))
    fail(Status::kPermission, "{}: the caller is not the commitment's miner identity {}", kCall,
         to_hex(c.miner_identity));
  auto task = tasks_.find(c.task_id);
  if (task == tasks_.end()) fail(Status::kNotFound, "{}: no task {}", kCall, c.task_id.hex());
  check_not_ended(task->second.task, c.task_id, now, kCall);
  task::check_commitment(task->second.task, c);
  const Digest run_id = c.run_id();
  RunKey key{c.task_id, c.miner_identity};
  if (auto it = run_keys_.find(key); it != run_keys_.end()) {
    if (it->second != run_id)
      fail(Status::kConflict, "{}: task {} already holds another commitment of this miner (run {})",
           kCall, c.task_id.hex(), it->second.hex());
    height_ = now;
    return run_id;
  }
  // A commitment names its task and its miner, so a free key means a new run id.
  std::map<Digest, Run> run_node;
  Run &r = run_node[run_id];
  r.commitment_bytes = to_bytes(commitment);
  r.commitment = std::move(c);
  std::map<RunKey, Digest> key_node;
  key_node.emplace(std::move(key), run_id);
  runs_.merge(run_node);
  run_keys_.merge(key_node);
  height_ = now;
  return run_id;
}

void Ledger::post_checkpoint_root(ByteView caller, const Digest &run_id, uint64_t size,
                                  const Digest &root, ByteView consistency_proof, uint64_t now) {
  constexpr const char *kCall = "post_checkpoint_root";
  check_now(now);
  check_caller(caller, kCall);
  Run &r = run_for(run_id, kCall);
  if (!same(caller, r.commitment.miner_identity))
    fail(Status::kPermission, "{}: only the run's miner posts its roots", kCall);
  const uint64_t n = r.commitment.declared_steps;
  if (r.latest_size == n)
    fail(Status::kState, "{}: run {} is sealed ({} of {} steps posted)", kCall, run_id.hex(), n, n);
  check_not_ended(task_of(r), r.commitment.task_id, now, kCall);
  if (size == 0 || size > n)
    fail(Status::kOutOfRange, "{}: size {} is outside 1..{}", kCall, size, n);
  const std::vector<Digest> proof = merkle::decode_proof(consistency_proof);
  if (r.latest_size == 0) {
    // Nothing to be consistent with yet: the first root is taken as posted.
    if (!proof.empty())
      fail(Status::kProofLength,
           "{}: the first root of a run takes an empty consistency proof, not {} hashes", kCall,
           proof.size());
  } else {
    if (size < r.latest_size)
      fail(Status::kConflict, "{}: size {} is below the latest posted size {}; the log only grows",
           kCall, size, r.latest_size);
    if (size == r.latest_size && root != r.latest_root)
      fail(Status::kConflict, "{}: size {} is already posted with root {}", kCall, size,
           r.latest_root.hex());
    // For a re-post of the latest (size, root) this demands an empty proof.
    merkle::verify_consistency(r.latest_size, size, r.latest_root.view(), root.view(), proof);
  }
  const bool seals = size == n;
  if (seals && config_.draw_delay > UINT64_MAX - now)
    fail(Status::kOutOfRange, "{}: the draw height of a run sealed at height {} does not fit 64 bits",
         kCall, now);
  if (seals) ++waiting_[now + config_.draw_delay];  // the one step that may allocate
  r.latest_size = size;
  r.latest_root = root;
  if (seals) r.seal_height = now;
  height_ = now;
}

bool Ledger::needed(std::map<uint64_t, Digest>::const_iterator entry) const {
  // A run waiting since d is drawn from the first entry at a height >= d, so
  // this entry serves the draw heights above the previous entry's height.
  const uint64_t from = entry == randomness_.begin() ? 0 : std::prev(entry)->first + 1;
  const auto w = waiting_.lower_bound(from);
  return w != waiting_.end() && w->first <= entry->first;
}

void Ledger::post_randomness(const Digest &randomness, uint64_t now) {
  constexpr const char *kCall = "post_randomness";
  check_now(now);
  if (last_randomness_ && last_randomness_->height == now) {
    if (last_randomness_->value != randomness)
      fail(Status::kConflict, "{}: height {} already has the randomness {}", kCall, now,
           last_randomness_->value.hex());
    height_ = now;
    return;
  }
  // Keep the value only when a waiting run is drawn from it: one waiting
  // since a height after the last kept entry, and not after now.
  const uint64_t after = randomness_.empty() ? 0 : randomness_.rbegin()->first + 1;
  const auto w = waiting_.lower_bound(after);
  if (w != waiting_.end() && w->first <= now) {
    std::map<uint64_t, Digest> node;
    node.emplace(now, randomness);
    randomness_.merge(node);
  }
  last_randomness_ = BlockRandomness{now, randomness};
  height_ = now;
}

void Ledger::register_verifier(ByteView caller, uint64_t stake, uint64_t now) {
  constexpr const char *kCall = "register_verifier";
  check_now(now);
  check_caller(caller, kCall);
  if (stake < config_.min_stake)
    fail(Status::kInvalidArgument, "{}: a stake of {}, the least is {}", kCall, stake, config_.min_stake);
  Bytes identity = to_bytes(caller);
  if (auto it = verifiers_.find(identity); it != verifiers_.end()) {
    if (it->second.stake != stake)
      fail(Status::kConflict, "{}: {} is registered with a stake of {}", kCall, to_hex(identity),
           it->second.stake);
    height_ = now;
    return;
  }
  if (stake > UINT64_MAX - total_stake_)
    fail(Status::kOutOfRange, "{}: the verifiers' stakes would sum past 2^64 - 1", kCall);
  verifiers_.emplace(std::move(identity), Verifier{stake, now});
  total_stake_ += stake;
  height_ = now;
}

std::vector<Candidate> Ledger::candidates_for(const Run &r, uint64_t height, const std::set<Bytes> &excluded) const {
  // Registered before the value existed, so no registration was chosen
  // knowing it; never the run's own miner.
  std::vector<Candidate> candidates;
  for (const auto &[identity, v] : verifiers_)
    if (v.registered_height < height && !same(identity, r.commitment.miner_identity) && !excluded.contains(identity))
      candidates.push_back({identity, v.stake});
  return candidates;
}

uint32_t Ledger::round_of(const Run &r, uint64_t id) {
  // The ids are consecutive, in round order, and the rounds fit 32 bits.
  return static_cast<uint32_t>(id - r.challenge_ids.front());
}

std::vector<std::vector<Candidate>> Ledger::committees_for(const Run &r, const Digest &run_id, uint32_t rounds,
                                                           uint64_t height, const Digest &value) const {
  return draw_committees(value.view(), run_id, rounds, candidates_for(r, height, {}), task_of(r).committee_size);
}

std::vector<uint64_t> Ledger::issue_challenge(const Digest &run_id, uint64_t now) {
  constexpr const char *kCall = "issue_challenge";
  check_now(now);
  Run &r = run_for(run_id, kCall);
  const uint64_t n = r.commitment.declared_steps;
  if (!r.sealed())
    fail(Status::kState, "{}: run {} is not sealed ({} of {} steps posted)", kCall, run_id.hex(),
         r.latest_size, n);
  if (r.drawn_from) {  // once per run: a repeat names the same challenges
    std::vector<uint64_t> ids = r.challenge_ids;
    height_ = now;
    return ids;
  }
  // Nobody chooses the steps: they come from the chain's randomness of a
  // block after the seal, unknown to the miner when it sealed the run.
  const uint64_t due = draw_height(r);
  const auto entry = randomness_for(due);
  if (entry == randomness_.end())
    fail(Status::kState, "{}: run {} waits for the chain randomness of a height >= {} (latest: {})",
         kCall, run_id.hex(), due,
         last_randomness_ ? std::to_string(last_randomness_->height) : std::string("none"));
  // Rounds and mode are the task's: whoever triggers the draw chooses neither.
  const task::Task &t = task_of(r);
  const uint64_t rounds = t.challenge_rounds;
  const Mode mode = t.challenge_mode == task::ChallengeMode::kNormBucket ? Mode::kNormBucket : Mode::kBitwise;
  // rounds <= min_steps <= n holds by the task's rules.
  const std::vector<uint64_t> steps = challenge::derive_challenges(entry->second.view(), run_id, n, rounds);
  if (!config_.deadlines_fit(now))
    fail(Status::kOutOfRange,
         "{}: the deadlines of a challenge issued at height {} do not fit 64 bits", kCall, now);
  if (rounds > UINT64_MAX - next_challenge_id_)
    fail(Status::kLimit, "{}: challenge ids are exhausted", kCall);

  std::vector<std::vector<Candidate>> committees =
      committees_for(r, run_id, static_cast<uint32_t>(rounds), entry->first, entry->second);
  std::map<uint64_t, Challenge> fresh;
  std::vector<uint64_t> ids;
  ids.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    Challenge &c = fresh[next_challenge_id_ + i];
    c.run_id = run_id;
    c.step = steps[i];
    c.mode = mode;
    c.issued_height = now;
    for (Candidate &m : committees[i]) c.committee.emplace(std::move(m.identity), m.stake);
    ids.push_back(next_challenge_id_ + i);
  }
  std::vector<uint64_t> kept_ids = ids;  // the last step that may allocate
  // Nothing below allocates or throws.
  const BlockRandomness used{entry->first, entry->second};
  stop_waiting(due);
  if (!needed(entry)) randomness_.erase(entry);
  r.drawn_from = used;
  r.challenge_ids = std::move(kept_ids);
  challenges_.merge(fresh);
  next_challenge_id_ += rounds;
  height_ = now;
  return ids;
}

void Ledger::submit_opening(ByteView caller, uint64_t challenge_id, const Digest &manifest_digest,
                            ByteView step_leaf, ByteView leaf_proof, uint64_t now) {
  constexpr const char *kCall = "submit_opening";
  check_now(now);
  check_caller(caller, kCall);
  Challenge &c = challenge_for(challenge_id, kCall);
  const Run &r = runs_.at(c.run_id);
  if (!same(caller, r.commitment.miner_identity))
    fail(Status::kPermission, "{}: only the run's miner opens its challenges", kCall);
  if (now > opening_deadline(c))
    fail(Status::kState, "{}: the opening phase of challenge {} closed at height {}", kCall,
         challenge_id, opening_deadline(c));
  const commit::StepLeaf leaf = commit::StepLeaf::decode(step_leaf);
  if (leaf.run_id != c.run_id)
    fail(Status::kInvalidArgument, "{}: the leaf is a step of run {}, challenge {} is on run {}", kCall,
         leaf.run_id.hex(), challenge_id, c.run_id.hex());
  if (leaf.step != c.step)
    fail(Status::kInvalidArgument, "{}: the leaf names step {}, challenge {} is on step {}", kCall,
         leaf.step, challenge_id, c.step);
  // The run is sealed, so its latest root is the final one over all steps.
  merkle::verify_inclusion(c.step - 1, r.commitment.declared_steps,
                           hash::leaf_hash(step_leaf).view(), merkle::decode_proof(leaf_proof),
                           r.latest_root.view());
  if (c.opening) {
    // The leaf is the posted one, so only the manifest can differ; a repeat
    // keeps the first opening's height, so it never moves the deadlines.
    if (c.opening->manifest_digest != manifest_digest)
      fail(Status::kConflict, "{}: challenge {} is already opened with manifest {}", kCall,
           challenge_id, c.opening->manifest_digest.hex());
    height_ = now;
    return;
  }
  // Witnesses get the whole commit window, however late the miner opens.
  c.opening = Opening{now, manifest_digest, leaf.state_digest, leaf.update_norm};
  height_ = now;
}

void Ledger::commit_witness(ByteView caller, uint64_t challenge_id, const Digest &commitment,
                            uint64_t now) {
  constexpr const char *kCall = "commit_witness";
  check_now(now);
  check_caller(caller, kCall);
  Challenge &c = challenge_for(challenge_id, kCall);
  check_not_awaiting(c, challenge_id, kCall);
  if (!c.committee.contains(to_bytes(caller)))
    fail(Status::kPermission, "{}: {} is not on the committee of challenge {}", kCall, to_hex(caller),
         challenge_id);
  if (!c.opening) fail(Status::kState, "{}: challenge {} is not opened yet", kCall, challenge_id);
  if (now > commit_deadline(c))
    fail(Status::kState, "{}: the commit phase of challenge {} closed at height {}", kCall,
         challenge_id, commit_deadline(c));
  Bytes identity = to_bytes(caller);
  if (auto it = c.commits.find(identity); it != c.commits.end()) {
    if (it->second != commitment)
      fail(Status::kConflict, "{}: {} already committed {} on challenge {}", kCall,
           to_hex(identity), it->second.hex(), challenge_id);
    height_ = now;
    return;
  }
  c.commits.emplace(std::move(identity), commitment);
  height_ = now;
}

void Ledger::reveal_witness_value(ByteView caller, uint64_t challenge_id, const witness::Finding &finding,
                                  ByteView salt, uint64_t now) {
  constexpr const char *kCall = "reveal_witness_value";
  check_now(now);
  check_caller(caller, kCall);
  Challenge &c = challenge_for(challenge_id, kCall);
  // Revealing while commits are still accepted would let a late witness
  // copy an early reveal. Without an opening there is no commit phase.
  if (!c.opening) fail(Status::kState, "{}: challenge {} is not opened", kCall, challenge_id);
  check_not_awaiting(c, challenge_id, kCall);
  if (now <= commit_deadline(c))
    fail(Status::kState, "{}: the commit phase of challenge {} is open until height {}", kCall,
         challenge_id, commit_deadline(c));
  if (now > reveal_deadline(c))
    fail(Status::kState, "{}: the reveal phase of challenge {} closed at height {}", kCall,
         challenge_id, reveal_deadline(c));
  Bytes identity = to_bytes(caller);
  auto it = c.commits.find(identity);
  if (it == c.commits.end())
    fail(Status::kNotFound, "{}: {} has no commitment on challenge {}", kCall, to_hex(identity),
         challenge_id);
  verify_reveal(it->second, statement(challenge_id, c, finding), salt, caller);
  if (c.reveals.contains(identity))
    fail(Status::kDuplicate, "{}: {} already revealed on challenge {}", kCall, to_hex(identity),
         challenge_id);
  c.reveals.emplace(std::move(identity), Reveal{finding, to_bytes(salt)});
  height_ = now;
}

std::optional<int64_t> Ledger::committed_bucket(const Challenge &c) const {
  if (c.mode != Mode::kNormBucket || !c.opening) return std::nullopt;
  // A decoded leaf's norm is not negative, so this never throws.
  return witness::norm_bucket(c.opening->update_norm, task_of(runs_.at(c.run_id)).spec.norm_bucket_resolution);
}

std::optional<std::string> Ledger::misconfigured(const Challenge &c, const Reveal &r) const {
  // The spec and the program are the task's, posted before the run: a
  // member whose spec or program check failed verified with inputs of its
  // own, which says nothing of the miner.
  const commit::OpeningCheck check = r.finding.check;
  if (r.finding.kind == Kind::kInvalidOpening &&
      (check == commit::OpeningCheck::kSpec || check == commit::OpeningCheck::kProgram))
    return fmt::format("check {} is of the member's own inputs (the task's spec and program)",
                       commit::opening_check_name(check));
  return witness::environment_mismatch(r.finding.environment, task_of(runs_.at(c.run_id)).spec, c.mode);
}

ChallengeVerdict Ledger::evaluate(uint64_t id, const Challenge &c) const {
  ChallengeVerdict v = judge(c);
  Outcome &o = v.outcome;
  o.challenge_id = id;
  o.attempt = c.attempt;
  o.run_id = c.run_id;
  o.step = c.step;
  o.mode = c.mode;
  o.verdict = v.verdict;
  o.cause = v.cause;
  o.cluster_size = v.cluster_size;
  o.cluster_stake = v.cluster_stake;
  for (const auto &[identity, stake] : c.committee) o.committee_stake += stake;  // fits: below 2^64
  o.minority = v.minority;
  o.silent = v.silent;
  o.misconfigured = v.misconfigured;
  o.unreplayed = v.unreplayed;
  return v;
}

ChallengeVerdict Ledger::judge(const Challenge &c) const {
  if (!c.opening)
    return {Verdict::kFail, "no opening within the opening window", 0, 0, {}, {}, {}, {}, Cause::kNoOpening, {}, 0};
  uint64_t committee_stake = 0;  // fits: the registry's stakes sum below 2^64
  for (const auto &[identity, stake] : c.committee) committee_stake += stake;
  if (committee_stake == 0)
    return {Verdict::kInconclusive, "no committee: no verifier was registered before the draw", 0, 0, {}, {}, {}, {},
            Cause::kNoCommittee, {}, 0};
  // Each counted reveal (an environment that can judge the step) either
  // agrees with the opened step (a replayed value equal to its state
  // digest; in norm-bucket mode a bucket adjacent to the committed one), or
  // blames the miner: a replayed value that differs, or no valid opening
  // served to the member (unavailable, or a failed check).
  const std::optional<int64_t> committed = committed_bucket(c);
  // Whether each reveal counts, judged once (the lambdas below ask often).
  std::set<const Reveal *> excluded;
  for (const auto &[identity, r] : c.reveals)
    if (misconfigured(c, r)) excluded.insert(&r);
  auto counted = [&](const Reveal &r) { return !excluded.contains(&r); };
  auto replayed = [&](const Reveal &r) { return r.finding.kind == Kind::kReplayed; };
  auto matches = [&](const Reveal &r) {
    if (!counted(r) || !replayed(r)) return false;
    return c.mode == Mode::kBitwise ? r.finding.replayed_state == c.opening->state_digest
                                    : witness::buckets_match(*committed, r.finding.bucket);
  };
  // Bitwise, a replay also gives the step's gradient, which the miner never
  // publishes: members stating the opened state agree only with the
  // gradient most of their stake replayed. The others stated a value they
  // could copy without replaying (attack 5): recorded, not counted. Across
  // architectures gradients differ in their bits, so norm-bucket mode
  // cannot tell (docs/ledger.md section 2.9).
  std::optional<Digest> replayed_gradient;
  if (c.mode == Mode::kBitwise) {
    std::map<Digest, uint64_t> gradients;  // gradient digest -> stake
    for (const auto &[identity, r] : c.reveals)
      if (matches(r)) gradients[r.finding.gradient_digest] += c.committee.at(identity);
    for (const auto &[g, stake] : gradients)
      if (!replayed_gradient || stake > gradients.at(*replayed_gradient)) replayed_gradient = g;
  }
  auto unreplayed = [&](const Reveal &r) {
    return matches(r) && replayed_gradient && r.finding.gradient_digest != *replayed_gradient;
  };
  auto agrees = [&](const Reveal &r) { return matches(r) && !unreplayed(r); };
  // What a replayed value is compared by: its digest, or its bucket.
  using Value = std::pair<Digest, int64_t>;
  auto value_of = [&](const Reveal &r) {
    return c.mode == Mode::kBitwise ? Value{r.finding.replayed_state, 0} : Value{Digest{}, r.finding.bucket};
  };
  auto unserved = [&](const Reveal &r) { return counted(r) && !replayed(r); };
  uint64_t agree_stake = 0, agree_count = 0, unserved_stake = 0, unserved_count = 0, excluded_stake = 0;
  std::map<Value, std::pair<uint64_t, uint64_t>> other;  // value -> (stake, count)
  for (const auto &[identity, r] : c.reveals) {
    const uint64_t stake = c.committee.at(identity);
    if (!counted(r) || unreplayed(r)) {
      excluded_stake += stake;
    } else if (agrees(r)) {
      agree_stake += stake;
      ++agree_count;
    } else if (unserved(r)) {
      unserved_stake += stake;
      ++unserved_count;
    } else {
      auto &o = other[value_of(r)];
      o.first += stake;
      ++o.second;
    }
  }
  auto best = other.end();
  uint64_t other_stake = 0;
  for (auto it = other.begin(); it != other.end(); ++it) {
    other_stake += it->second.first;
    if (best == other.end() || it->second.first > best->second.first) best = it;
  }
  const uint64_t best_stake = best == other.end() ? 0 : best->second.first;
  // Fits: parts of committee_stake.
  const uint64_t blame_stake = other_stake + unserved_stake;
  uint64_t blame_count = unserved_count;
  for (const auto &[value, o] : other) blame_count += o.second;
  const char *reference = c.mode == Mode::kBitwise ? "the opened state digest" : "the committed bucket";
  // Who answers for the outcome: members outside the deciding group (when
  // one decides), members that never revealed, members whose environment
  // could not judge the step, members that stated the opened state with a
  // gradient the others did not replay.
  auto account = [&](ChallengeVerdict v, const std::function<bool(const Reveal &)> &deciding) {
    for (const auto &[identity, stake] : c.committee) {
      auto r = c.reveals.find(identity);
      if (r == c.reveals.end())
        v.silent.push_back(identity);
      else if (!counted(r->second))
        v.misconfigured.push_back(identity);
      else if (unreplayed(r->second))
        v.unreplayed.push_back(identity);
      else if (deciding && !deciding(r->second))
        v.minority.push_back(identity);
    }
    return v;
  };
  // A strict majority of the committee's stake, revealed or not, decides.
  if (agree_stake > committee_stake - agree_stake)
    return account({Verdict::kPass,
                    fmt::format("members holding {} of the committee's stake {} agree with {}", agree_stake,
                                committee_stake, reference),
                    agree_count, agree_stake, {}, {}, {}, {}, Cause::kAgreement, {}, 0},
                   agrees);
  // The miner chooses whom it serves an opening: members it served a forged
  // step replay another value than the opened one, the others were served
  // nothing valid; all blame it, and together they decide. (With an honest
  // majority their values are one; which of several wrong values is right
  // is the dispute game's question, not the verdict's.)
  if (blame_stake > committee_stake - blame_stake) {
    std::string what;
    if (other_stake > 0) {
      what = c.mode == Mode::kBitwise ? "replayed digest " + best->first.first.hex()
                                      : fmt::format("replayed bucket {}", best->first.second);
      what += fmt::format(" (stake {}", best_stake);
      if (other_stake > best_stake) what += fmt::format("; other values, stake {}", other_stake - best_stake);
      what += fmt::format("), not {}", reference);
    }
    if (unserved_stake > 0)
      what += fmt::format("{}were served no valid opening (stake {})", what.empty() ? "" : "; ", unserved_stake);
    return account({Verdict::kFail,
                    fmt::format("members holding {} of the committee's stake {} blame the miner: {}", blame_stake,
                                committee_stake, what),
                    blame_count, blame_stake, {}, {}, {}, {}, Cause::kBlame, {}, 0},
                   [&](const Reveal &r) { return counted(r) && !agrees(r) && !unreplayed(r); });
  }
  const bool agree_larger = agree_stake >= blame_stake;
  return account({Verdict::kInconclusive,
                  fmt::format("no side holds a majority of the committee's stake {}: {} agree with {}, {} blame the "
                              "miner ({} replayed other values, {} served no valid opening), {} misconfigured or "
                              "unreplayed, {} unrevealed",
                              committee_stake, agree_stake, reference, blame_stake, other_stake, unserved_stake,
                              excluded_stake, committee_stake - agree_stake - blame_stake - excluded_stake),
                  agree_larger ? agree_count : blame_count, agree_larger ? agree_stake : blame_stake, {}, {}, {},
                  {},
                  agree_stake + blame_stake > committee_stake - agree_stake - blame_stake ? Cause::kSplit
                                                                                          : Cause::kParticipation,
                  {}, 0},
                 nullptr);
}

ChallengeVerdict Ledger::finalize_challenge(uint64_t challenge_id, uint64_t now) {
  constexpr const char *kCall = "finalize_challenge";
  check_now(now);
  Challenge &c = challenge_for(challenge_id, kCall);
  check_not_awaiting(c, challenge_id, kCall);
  if (now <= final_after(c))
    fail(Status::kState, "{}: the {} phase of challenge {} is open until height {}", kCall,
         c.opening ? "reveal" : "opening", challenge_id, final_after(c));
  if (c.outcome) fail(Status::kState, "{}: challenge {} is already final", kCall, challenge_id);
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  ChallengeVerdict v = evaluate(challenge_id, c);
  const Digest leaf = hash::leaf_hash(v.outcome.encode());
  v.outcome_index = outcomes_.size();
  // Too few counted reveals is a committee's failure, not a disagreement:
  // while attempts remain, the challenge waits for a new committee, drawn
  // from randomness nobody knows yet, without this one's silent,
  // misconfigured and unreplayed members. The attempt's record is logged.
  v.rerun = v.cause == Cause::kParticipation && c.attempt < config_.max_attempts;
  if (v.rerun) {
    if (config_.draw_delay > UINT64_MAX - now)
      fail(Status::kOutOfRange, "{}: a redraw after height {} does not fit 64 bits", kCall, now);
    std::set<Bytes> excluded = c.excluded;
    for (const auto *list : {&v.silent, &v.misconfigured, &v.unreplayed})
      excluded.insert(list->begin(), list->end());
    // The waiting count's node is built here and spliced in after the
    // append (strong guarantee), as every call inserts (see above).
    const uint64_t from = now + config_.draw_delay;
    std::map<uint64_t, uint64_t> waiting_node;
    if (!waiting_.contains(from)) waiting_node.emplace(from, 0);
    outcomes_.append_hash(leaf);
    waiting_.merge(waiting_node);
    ++waiting_.at(from);
    c.excluded.swap(excluded);
    c.awaiting = from;
    c.committee.clear();
    c.commits.clear();
    c.reveals.clear();
    height_ = now;
    return v;
  }
  // The last open challenge of its run closes the run: its record shrinks
  // to the key and the slashable flag, built here, before anything changes.
  const Digest run_id = c.run_id;
  Run &r = runs_.at(run_id);
  const bool closes = std::ranges::all_of(
      r.challenge_ids, [&](uint64_t id) { return id == challenge_id || challenges_.at(id).outcome; });
  std::map<Digest, ClosedRun> closed_node;
  if (closes)
    closed_node.emplace(run_id,
                        ClosedRun{r.commitment.task_id, r.commitment.miner_identity,
                                  r.slashable || v.verdict == Verdict::kFail, r.commitment.declared_steps,
                                  r.latest_root, r.commitment.initial_state_digest});
  // Appending may allocate (strong guarantee); nothing after it does.
  outcomes_.append_hash(leaf);
  c.outcome = Final{v.verdict, v.cluster_size, v.cluster_stake, v.outcome_index};
  if (v.verdict == Verdict::kFail) r.slashable = true;
  if (closes) {
    for (uint64_t id : r.challenge_ids) challenges_.erase(id);
    runs_.erase(run_id);
    closed_.merge(closed_node);
  }
  height_ = now;
  return v;
}

void Ledger::redraw_committee(uint64_t challenge_id, uint64_t now) {
  constexpr const char *kCall = "redraw_committee";
  check_now(now);
  Challenge &c = challenge_for(challenge_id, kCall);
  if (!c.awaiting)
    fail(Status::kState, "{}: challenge {} does not await a new committee", kCall, challenge_id);
  const auto entry = randomness_for(*c.awaiting);
  if (entry == randomness_.end())
    fail(Status::kState, "{}: challenge {} waits for the chain randomness of a height >= {} (latest: {})", kCall,
         challenge_id, *c.awaiting,
         last_randomness_ ? std::to_string(last_randomness_->height) : std::string("none"));
  if (config_.commit_window > UINT64_MAX - now || config_.reveal_window > UINT64_MAX - now - config_.commit_window)
    fail(Status::kOutOfRange, "{}: the deadlines of a committee drawn at height {} do not fit 64 bits", kCall, now);
  const Run &r = runs_.at(c.run_id);
  std::vector<Candidate> drawn = draw_committee(entry->second.view(), c.run_id, round_of(r, challenge_id),
                                                candidates_for(r, entry->first, c.excluded), task_of(r).committee_size);
  std::map<Bytes, uint64_t> committee;
  for (Candidate &m : drawn) committee.emplace(std::move(m.identity), m.stake);
  // Nothing below allocates or throws.
  const BlockRandomness used{entry->first, entry->second};
  stop_waiting(*c.awaiting);
  if (!needed(entry)) randomness_.erase(entry);
  c.committee.swap(committee);
  c.awaiting.reset();
  c.redrawn_from = used;
  c.redrawn_height = now;
  ++c.attempt;
  height_ = now;
}

PrunedTask Ledger::prune_task(const Digest &task_id, uint64_t now) {
  constexpr const char *kCall = "prune_task";
  check_now(now);
  const auto task = tasks_.find(task_id);
  if (task == tasks_.end()) fail(Status::kNotFound, "{}: no task {}", kCall, task_id.hex());
  const uint64_t end = task->second.task.end_height;
  if (now <= end)
    fail(Status::kState, "{}: task {} takes runs and roots until height {} (its end_height); now = {}", kCall,
         task_id.hex(), end, now);
  // The task's runs are the keys (task id, miner), adjacent in run_keys_.
  PrunedTask out;
  const auto first = run_keys_.lower_bound(RunKey{task_id, Bytes{}});
  auto last = first;
  for (; last != run_keys_.end() && last->first.first == task_id; ++last) {
    if (closed_.contains(last->second)) {
      ++out.closed_runs;
    } else if (runs_.at(last->second).sealed()) {
      fail(Status::kState, "{}: run {} of task {} is sealed and not closed: its challenges are not all final", kCall,
           last->second.hex(), task_id.hex());
    } else {
      ++out.void_runs;  // never sealed by the end: no roots can come
    }
  }
  // Erasing does not allocate: nothing below can fail.
  for (auto it = first; it != last; ++it)
    if (closed_.erase(it->second) == 0) runs_.erase(it->second);
  run_keys_.erase(first, last);
  tasks_.erase(task);
  height_ = now;
  return out;
}

task::Task Ledger::task_info(const Digest &task_id) const {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) fail(Status::kNotFound, "task_info: no task {}", task_id.hex());
  return it->second.task;
}

RunInfo Ledger::run_info(const Digest &run_id) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    auto closed = closed_.find(run_id);
    if (closed == closed_.end()) fail(Status::kNotFound, "run_info: no run {}", run_id.hex());
    RunInfo i;
    i.run_id = run_id;
    i.task_id = closed->second.task_id;
    i.miner_identity = closed->second.miner_identity;
    i.slashable = closed->second.slashable;
    i.declared_steps = i.latest_size = closed->second.declared_steps;
    i.latest_root = closed->second.root;
    i.sealed = true;  // a run closes once its challenges, drawn after its seal, are final
    i.closed = true;
    return i;
  }
  const Run &r = it->second;
  RunInfo i;
  i.run_id = run_id;
  i.task_id = r.commitment.task_id;
  i.miner_identity = r.commitment.miner_identity;
  i.declared_steps = r.commitment.declared_steps;
  i.latest_size = r.latest_size;
  i.latest_root = r.latest_root;
  i.sealed = r.sealed();
  if (i.sealed) {
    i.seal_height = r.seal_height;
    i.draw_height = draw_height(r);
  }
  i.drawn_from = r.drawn_from;
  i.slashable = r.slashable;
  return i;
}

VerifierInfo Ledger::verifier_info(ByteView identity) const {
  auto it = verifiers_.find(to_bytes(identity));
  if (it == verifiers_.end()) fail(Status::kNotFound, "verifier_info: no verifier {}", to_hex(identity));
  return {it->first, it->second.stake, it->second.registered_height};
}

ChallengeInfo Ledger::challenge_info(uint64_t challenge_id) const {
  const Challenge &c = challenge_for(challenge_id, "challenge_info");
  ChallengeInfo i;
  i.id = challenge_id;
  i.run_id = c.run_id;
  i.step = c.step;
  i.mode = c.mode;
  i.issued_height = c.issued_height;
  i.opening_deadline = opening_deadline(c);
  i.opened = c.opening.has_value();
  if (c.opening) {
    i.opened_height = c.opening->height;
    i.commit_deadline = commit_deadline(c);
    i.reveal_deadline = reveal_deadline(c);
    i.manifest_digest = c.opening->manifest_digest;
    i.opened_state = c.opening->state_digest;
    i.opened_update_norm = c.opening->update_norm;
  }
  i.committed_bucket = committed_bucket(c);
  for (const auto &[identity, stake] : c.committee) {
    i.committee.push_back({identity, stake, c.commits.contains(identity), c.reveals.contains(identity)});
    i.committee_stake += stake;
  }
  i.witness_commits = c.commits.size();
  i.witness_reveals = c.reveals.size();
  i.attempt = c.attempt;
  i.awaiting_redraw_from = c.awaiting;
  i.redrawn_from = c.redrawn_from;
  i.redrawn_height = c.redrawn_height;
  i.excluded.assign(c.excluded.begin(), c.excluded.end());
  // Nothing that feeds the verdict changes after the reveal phase, so the
  // reason is recomputed rather than stored.
  if (c.outcome) {
    i.verdict = evaluate(challenge_id, c);  // the stored outcome is this (finalize and load check it)
    i.verdict->outcome_index = c.outcome->outcome_index;
  }
  return i;
}

// ---- serialization ----

namespace {

void put(std::string *dst, const Digest &d) {
  dst->assign(reinterpret_cast<const char *>(d.bytes.data()), d.bytes.size());
}

void put(v2::LedgerRandomness *dst, uint64_t height, const Digest &value) {
  dst->set_height(height);
  put(dst->mutable_value(), value);
}

}  // namespace

Bytes Ledger::save() const {
  v2::LedgerState p;
  p.set_format_version(kStateFormatVersion);
  v2::LedgerConfig *cfg = p.mutable_config();
  cfg->set_commit_window(config_.commit_window);
  cfg->set_reveal_window(config_.reveal_window);
  cfg->set_max_committee_size(config_.max_committee_size);
  cfg->set_min_stake(config_.min_stake);
  cfg->set_max_rounds(config_.max_rounds);
  cfg->set_opening_window(config_.opening_window);
  cfg->set_draw_delay(config_.draw_delay);
  cfg->set_max_attempts(config_.max_attempts);
  cfg->set_dispute_window(config_.dispute_window);
  cfg->set_dispute_arity(config_.dispute_arity);
  cfg->set_referee(as_string(config_.referee));
  p.set_height(height_);
  p.set_next_challenge_id(next_challenge_id_);
  for (const auto &[run_id, r] : runs_) {  // std::map: sorted by key, bytewise
    v2::LedgerRun *m = p.add_runs();
    put(m->mutable_run_id(), run_id);
    m->set_commitment(as_string(r.commitment_bytes));
    m->set_latest_size(r.latest_size);
    if (r.latest_size > 0) put(m->mutable_latest_root(), r.latest_root);
    if (r.sealed()) m->set_seal_height(r.seal_height);
    if (r.drawn_from) put(m->mutable_drawn_from(), r.drawn_from->height, r.drawn_from->value);
    m->set_lost_dispute(r.lost_dispute);
  }
  for (const auto &[id, t] : tasks_) {
    v2::LedgerTask *m = p.add_tasks();
    put(m->mutable_task_id(), id);
    m->set_task(as_string(t.bytes));
  }
  for (const auto &[id, c] : challenges_) {
    v2::LedgerChallenge *m = p.add_challenges();
    m->set_id(id);
    put(m->mutable_run_id(), c.run_id);
    m->set_step(c.step);
    m->set_mode(c.mode == Mode::kNormBucket ? v2::LEDGER_MODE_NORM_BUCKET
                                            : v2::LEDGER_MODE_BITWISE);
    if (c.opening) {
      put(m->mutable_opening()->mutable_manifest_digest(), c.opening->manifest_digest);
      put(m->mutable_opening()->mutable_state_digest(), c.opening->state_digest);
      m->mutable_opening()->set_update_norm(c.opening->update_norm);
      m->mutable_opening()->set_height(c.opening->height);
    }
    for (const auto &[identity, commitment] : c.commits) {
      v2::LedgerWitnessCommit *w = m->add_commits();
      w->set_identity(as_string(identity));
      put(w->mutable_commitment(), commitment);
    }
    for (const auto &[identity, r] : c.reveals) {
      v2::LedgerWitnessReveal *w = m->add_reveals();
      w->set_identity(as_string(identity));
      const witness::Finding &f = r.finding;
      w->set_kind(static_cast<uint32_t>(f.kind));
      if (f.kind == Kind::kReplayed) {
        put(w->mutable_replayed_state(), f.replayed_state);
        w->set_bucket(f.bucket);
        put(w->mutable_gradient_digest(), f.gradient_digest);
      } else if (f.kind == Kind::kInvalidOpening) {
        w->set_check(static_cast<uint32_t>(f.check));
      }
      w->set_framework_version(f.environment.framework_version);
      w->set_intra_op_threads(f.environment.intra_op_threads);
      w->set_hardware_class(f.environment.hardware_class);
      w->set_salt(as_string(r.salt));
    }
    if (c.outcome) {
      v2::LedgerVerdict *v = m->mutable_verdict();
      v->set_verdict(static_cast<v2::LedgerVerdictKind>(static_cast<int>(c.outcome->verdict)));
      v->set_cluster_size(c.outcome->cluster_size);
      v->set_cluster_stake(c.outcome->cluster_stake);
      v->set_outcome_index(c.outcome->outcome_index);
    }
    m->set_issued_height(c.issued_height);
    for (const auto &[identity, stake] : c.committee) {
      v2::LedgerMember *w = m->add_committee();
      w->set_identity(as_string(identity));
      w->set_stake(stake);
    }
    m->set_redraws(c.attempt - 1);
    if (c.awaiting) m->set_awaiting_redraw_from(*c.awaiting);
    if (c.redrawn_from) put(m->mutable_redrawn_from(), c.redrawn_from->height, c.redrawn_from->value);
    m->set_redrawn_height(c.redrawn_height);
    for (const Bytes &identity : c.excluded) m->add_excluded(as_string(identity));
  }
  for (const auto &[identity, v] : verifiers_) {
    v2::LedgerVerifier *w = p.add_verifiers();
    w->set_identity(as_string(identity));
    w->set_stake(v.stake);
    w->set_registered_height(v.registered_height);
  }
  if (last_randomness_) put(p.mutable_last_randomness(), last_randomness_->height, last_randomness_->value);
  for (const auto &[height, value] : randomness_) put(p.add_randomness(), height, value);
  for (const auto &[run_id, r] : closed_) {
    v2::LedgerClosedRun *m = p.add_closed_runs();
    put(m->mutable_run_id(), run_id);
    put(m->mutable_task_id(), r.task_id);
    m->set_miner_identity(as_string(r.miner_identity));
    m->set_slashable(r.slashable);
    m->set_declared_steps(r.declared_steps);
    put(m->mutable_root(), r.root);
    put(m->mutable_initial_state_digest(), r.initial_state_digest);
  }
  if (outcomes_.size() > 0) p.set_outcome_log(as_string(outcomes_.save()));
  save_disputes(p);
  // Saving more than load accepts would produce a state nobody can restore.
  const size_t n = p.ByteSizeLong();
  if (n > kMaxLedgerStateBytes)
    fail(Status::kLimit, "ledger state of {} bytes exceeds the limit of {}", n,
         kMaxLedgerStateBytes);
  const std::string s = p.SerializeAsString();
  return Bytes(s.begin(), s.end());
}

Ledger Ledger::load(ByteView b) {
  // Parsing allocates in proportion to the input, so bounding the input
  // bounds every allocation below.
  if (b.size() > kMaxLedgerStateBytes)
    fail(Status::kLimit, "ledger state of {} bytes, the limit is {}", b.size(),
         kMaxLedgerStateBytes);
  // Canonical minimum sizes of the repeated elements (ledger.proto): a run
  // holds a run_id (34 bytes) and a commitment; a challenge a run_id; a
  // witness commitment an identity and a digest; a reveal an identity (3
  // bytes or more), a salt of 16 bytes or more (18), a kind (2), a
  // framework_version, intra_op_threads and hardware_class (3, 2, 3); a
  // task its task_id and the task; a randomness entry its value; a closed
  // run its run_id, task_id, miner identity, declared_steps, root and
  // initial_state_digest.
  codec::check_min_sizes(b,
                          {{5, 34},
                           {6, 34, {{9, 37}, {10, 31}, {13, 5}, {18, 1}}},
                           {7, 36},
                           {9, 34},
                           {10, 5},
                           {11, 71},
                           {13, 141}},
                          "ledger state");
  v2::LedgerState p;
  if (!p.ParseFromArray(b.data(), static_cast<int>(b.size())))
    bad_state("the bytes are not a pot.v2.LedgerState message");
  if (p.format_version() != kStateFormatVersion)
    bad_state(fmt::format("format_version {} is not supported (this SDK writes {}{})", p.format_version(),
                          kStateFormatVersion,
                          p.format_version() == 2   ? "; format 2 had no disputes and no dispute config"
                          : p.format_version() == 3 ? "; format 3 had no referee and no operator phase"
                          : p.format_version() == 4
                              ? "; format 4 kept no root of a closed run and no dispute a miner lost"
                              : ""));
  if (!p.has_config()) bad_state("the config is missing");
  LedgerConfig config;
  config.draw_delay = p.config().draw_delay();
  config.opening_window = p.config().opening_window();
  config.commit_window = p.config().commit_window();
  config.reveal_window = p.config().reveal_window();
  config.max_committee_size = p.config().max_committee_size();
  config.min_stake = p.config().min_stake();
  config.max_rounds = p.config().max_rounds();
  config.max_attempts = p.config().max_attempts();
  config.dispute_window = p.config().dispute_window();
  config.dispute_arity = p.config().dispute_arity();
  config.referee = to_bytes(view_of(p.config().referee()));
  Ledger l = as_state_check("config", [&] { return Ledger(config); });
  l.height_ = p.height();
  l.next_challenge_id_ = p.next_challenge_id();

  auto randomness_of = [&](const v2::LedgerRandomness &m, const std::string &where) {
    return BlockRandomness{m.height(), digest_field(m.value(), where + " value")};
  };
  if (p.has_last_randomness()) {
    l.last_randomness_ = randomness_of(p.last_randomness(), "last_randomness");
    if (l.last_randomness_->height > l.height_)
      bad_state(fmt::format("randomness of height {} posted above the height {}",
                            l.last_randomness_->height, l.height_));
  }
  // Whether a value at a height could have been posted: at most at the
  // latest post's height, and that post's value at its height.
  auto could_be_posted = [&](const BlockRandomness &e) {
    return l.last_randomness_ && e.height <= l.last_randomness_->height &&
           (e.height != l.last_randomness_->height || e.value == l.last_randomness_->value);
  };

  for (const v2::LedgerVerifier &m : p.verifiers()) {
    const ByteView identity = view_of(m.identity());
    const std::string where = "verifier " + to_hex(identity);
    as_state_check(where, [&] { check_caller(identity, "register_verifier"); });
    if (m.stake() < l.config_.min_stake) bad_state(where + ": a stake below min_stake");
    if (m.registered_height() > l.height_) bad_state(where + ": registered above the height");
    if (m.stake() > UINT64_MAX - l.total_stake_) bad_state(where + ": the stakes sum past 2^64 - 1");
    if (!l.verifiers_.emplace(to_bytes(identity), Verifier{m.stake(), m.registered_height()}).second)
      bad_state(where + " is listed twice");
    l.total_stake_ += m.stake();
  }

  for (const v2::LedgerTask &m : p.tasks()) {
    const Digest id = digest_field(m.task_id(), "task_id");
    const std::string where = "task " + id.hex();
    TaskRecord t;
    t.bytes = to_bytes(view_of(m.task()));
    t.task = as_state_check(where, [&] { return task::Task::decode(t.bytes); });
    if (t.task.id() != id) bad_state(where + ": task_id is not the task's digest");
    if (t.task.challenge_rounds > l.config_.max_rounds)
      bad_state(fmt::format("{}: {} challenge rounds, the config allows {}", where, t.task.challenge_rounds,
                            l.config_.max_rounds));
    if (t.task.committee_size > l.config_.max_committee_size)
      bad_state(fmt::format("{}: committees of {}, the config allows {}", where, t.task.committee_size,
                            l.config_.max_committee_size));
    if (!l.tasks_.emplace(id, std::move(t)).second) bad_state(where + " is listed twice");
  }

  for (const v2::LedgerRun &m : p.runs()) {
    const Digest run_id = digest_field(m.run_id(), "run_id");
    const std::string where = "run " + run_id.hex();
    Run r;
    r.commitment_bytes = to_bytes(view_of(m.commitment()));
    r.commitment = as_state_check(where + ": commitment", [&] {
      return commit::TrainingCommitment::decode(r.commitment_bytes);
    });
    if (r.commitment.run_id() != run_id)
      bad_state(where + ": run_id is not the commitment's digest");
    auto task = l.tasks_.find(r.commitment.task_id);
    if (task == l.tasks_.end()) bad_state(where + ": its task is not posted");
    // Every field is re-checked but a run-seeded run's schedule root, which
    // start_training_commitment recomputed (docs/ledger.md section 4).
    as_state_check(where, [&] { task::check_commitment(task->second.task, r.commitment, false); });
    r.latest_size = m.latest_size();
    if (r.latest_size > r.commitment.declared_steps)
      bad_state(fmt::format("{}: latest_size {} exceeds declared_steps {}", where, r.latest_size,
                            r.commitment.declared_steps));
    if (r.latest_size > 0)
      r.latest_root = digest_field(m.latest_root(), where + ": latest_root");
    else if (!m.latest_root().empty())
      bad_state(where + ": a root without a posted size");
    r.seal_height = m.seal_height();
    if (!r.sealed() && r.seal_height != 0) bad_state(where + ": a seal height, but not sealed");
    r.lost_dispute = r.slashable = m.lost_dispute();
    if (r.lost_dispute && !r.sealed()) bad_state(where + ": a lost dispute, but not sealed");
    if (r.seal_height > l.height_) bad_state(where + ": sealed above the height");
    if (r.seal_height > task->second.task.end_height) bad_state(where + ": sealed after its task's end_height");
    if (r.sealed() && l.config_.draw_delay > UINT64_MAX - r.seal_height)
      bad_state(where + ": a draw height past 64 bits");
    if (m.has_drawn_from()) {
      r.drawn_from = randomness_of(m.drawn_from(), where + ": drawn_from");
      if (!r.sealed()) bad_state(where + ": drawn before it was sealed");
      // Posted at most at the latest post's height, with its value there.
      if (r.drawn_from->height < l.draw_height(r) || !could_be_posted(*r.drawn_from))
        bad_state(where + ": drawn from randomness no post could have given it");
    } else if (r.sealed()) {
      ++l.waiting_[l.draw_height(r)];
    }
    if (!l.run_keys_.emplace(RunKey{r.commitment.task_id, r.commitment.miner_identity}, run_id).second)
      bad_state(where + ": its task already holds a run of the same miner");
    if (!l.runs_.emplace(run_id, std::move(r)).second) bad_state(where + " is listed twice");
  }

  for (const v2::LedgerClosedRun &m : p.closed_runs()) {
    const Digest run_id = digest_field(m.run_id(), "closed run_id");
    const std::string where = "closed run " + run_id.hex();
    ClosedRun r;
    r.task_id = digest_field(m.task_id(), where + ": task_id");
    r.miner_identity = to_bytes(view_of(m.miner_identity()));
    as_state_check(where + ": miner", [&] { check_caller(r.miner_identity, "start_training_commitment"); });
    r.slashable = m.slashable();
    r.declared_steps = m.declared_steps();
    if (r.declared_steps == 0) bad_state(where + ": declared_steps 0");
    r.root = digest_field(m.root(), where + ": root");
    r.initial_state_digest = digest_field(m.initial_state_digest(), where + ": initial_state_digest");
    if (!l.tasks_.contains(r.task_id)) bad_state(where + ": its task is not posted");
    if (l.runs_.contains(run_id)) bad_state(where + " is also open");
    if (!l.run_keys_.emplace(RunKey{r.task_id, r.miner_identity}, run_id).second)
      bad_state(where + ": its task already holds a run of the same miner");
    if (!l.closed_.emplace(run_id, std::move(r)).second) bad_state(where + " is listed twice");
  }
  if (!p.outcome_log().empty())
    l.outcomes_ = as_state_check("outcome_log", [&] { return merkle::Log::load(view_of(p.outcome_log())); });

  // Every stored randomness entry is one a waiting run is drawn from, and
  // every waiting run whose draw height was posted has its entry.
  for (const v2::LedgerRandomness &m : p.randomness()) {
    const std::string where = fmt::format("randomness of height {}", m.height());
    const BlockRandomness e = randomness_of(m, where);
    if (!could_be_posted(e)) bad_state(where + ": not a value that was posted");
    if (!l.randomness_.emplace(e.height, e.value).second) bad_state(where + " is listed twice");
  }

  std::map<Digest, std::vector<std::pair<uint64_t, uint64_t>>> challenges_per_run;  // (id, step)
  for (const v2::LedgerChallenge &m : p.challenges()) {
    const std::string where = fmt::format("challenge {}", m.id());
    if (m.id() >= l.next_challenge_id_) bad_state(where + ": its id was never issued");
    Challenge c;
    c.run_id = digest_field(m.run_id(), where + ": run_id");
    auto run = l.runs_.find(c.run_id);
    if (run == l.runs_.end())
      bad_state(where + (l.closed_.contains(c.run_id) ? ": its run is closed (its challenges are pruned)"
                                                       : ": its run is unknown"));
    Run &r = run->second;
    if (!r.drawn_from) bad_state(where + ": its run was not drawn");
    challenges_per_run[c.run_id].emplace_back(m.id(), m.step());
    c.step = m.step();
    if (c.step == 0 || c.step > r.commitment.declared_steps)
      bad_state(where + ": step outside the run");
    if (m.mode() == v2::LEDGER_MODE_BITWISE)
      c.mode = Mode::kBitwise;
    else if (m.mode() == v2::LEDGER_MODE_NORM_BUCKET)
      c.mode = Mode::kNormBucket;
    else
      bad_state(fmt::format("{}: unknown mode {}", where, static_cast<int>(m.mode())));
    if ((c.mode == Mode::kNormBucket) != (l.task_of(r).challenge_mode == task::ChallengeMode::kNormBucket))
      bad_state(where + ": its mode is not its task's");
    c.issued_height = m.issued_height();
    // Issued once the randomness was posted, at most at the height, with
    // deadlines that fit 64 bits (issue_challenge checks it).
    if (c.issued_height < r.drawn_from->height || c.issued_height > l.height_ ||
        !l.config_.deadlines_fit(c.issued_height))
      bad_state(where + ": an issue height that does not follow from its run, the config and the height");
    if (m.has_opening()) {
      c.opening = Opening{m.opening().height(),
                          digest_field(m.opening().manifest_digest(), where + ": manifest_digest"),
                          digest_field(m.opening().state_digest(), where + ": state_digest"),
                          m.opening().update_norm()};
      // A step leaf cannot commit a norm with its sign bit set (section 10).
      if (std::signbit(c.opening->update_norm)) bad_state(where + ": an opened update norm with its sign bit set");
      if (c.opening->height < c.issued_height || c.opening->height > l.opening_deadline(c) ||
          c.opening->height > l.height_)
        bad_state(where + ": opened outside its opening phase");
    }
    // Re-runs: attempt 1 is the run's draw; a later one was redrawn, once
    // opened, from randomness that could have been posted.
    if (m.redraws() >= l.config_.max_attempts) bad_state(where + ": more committees than max_attempts");
    c.attempt = m.redraws() + 1;
    if (c.attempt > 1) {
      if (!m.has_redrawn_from() || !c.opening) bad_state(where + ": a redraw without its randomness or an opening");
      c.redrawn_from = randomness_of(m.redrawn_from(), where + ": redrawn_from");
      c.redrawn_height = m.redrawn_height();
      if (!could_be_posted(*c.redrawn_from) || c.redrawn_from->height <= c.opening->height ||
          c.redrawn_height < c.redrawn_from->height || c.redrawn_height > l.height_ ||
          l.config_.commit_window > UINT64_MAX - c.redrawn_height ||
          l.config_.reveal_window > UINT64_MAX - c.redrawn_height - l.config_.commit_window)
        bad_state(where + ": a redraw at heights the calls could not give");
    } else if (m.has_redrawn_from() || m.redrawn_height() != 0) {
      bad_state(where + ": a redraw on the first committee");
    }
    for (const std::string &e : m.excluded()) {
      as_state_check(where + ": excluded", [&] { check_caller(view_of(e), "redraw_committee"); });
      if (!c.excluded.insert(to_bytes(view_of(e))).second) bad_state(where + ": an excluded member listed twice");
    }
    if (m.awaiting_redraw_from() != 0) {
      // Set by a finalization after the reveal phase, at most at the height.
      c.awaiting = m.awaiting_redraw_from();
      if (!c.opening || c.attempt >= l.config_.max_attempts || m.has_verdict() || m.committee_size() > 0 ||
          m.commits_size() > 0 || m.reveals_size() > 0 || *c.awaiting < l.config_.draw_delay ||
          *c.awaiting - l.config_.draw_delay <= l.reveal_deadline(c) ||
          *c.awaiting - l.config_.draw_delay > l.height_)
        bad_state(where + ": awaiting a redraw it could not await");
      ++l.waiting_[*c.awaiting];
    } else if (c.attempt == 1 && !c.excluded.empty()) {
      bad_state(where + ": excluded members before any re-run");
    }
    for (const v2::LedgerMember &w : m.committee())
      if (!c.committee.emplace(to_bytes(view_of(w.identity())), w.stake()).second)
        bad_state(where + ": a committee member listed twice");  // checked against the draw below
    if (m.commits_size() > 0 && !c.opening)
      bad_state(where + ": witness commits before the opening");
    for (const v2::LedgerWitnessCommit &w : m.commits()) {
      const ByteView identity = view_of(w.identity());
      as_state_check(where + ": witness", [&] { check_caller(identity, "commit_witness"); });
      if (!c.committee.contains(to_bytes(identity))) bad_state(where + ": a witness not on the committee");
      if (!c.commits
               .emplace(to_bytes(identity), digest_field(w.commitment(), where + ": commitment"))
               .second)
        bad_state(where + ": a witness committed twice");
    }
    if (m.reveals_size() > 0 && l.height_ <= l.commit_deadline(c))
      bad_state(where + ": reveals during the commit phase");
    for (const v2::LedgerWitnessReveal &w : m.reveals()) {
      Bytes identity = to_bytes(view_of(w.identity()));
      auto committed = c.commits.find(identity);
      if (committed == c.commits.end()) bad_state(where + ": a reveal without a commitment");
      Reveal rv;
      rv.salt = to_bytes(view_of(w.salt()));
      witness::Finding &f = rv.finding;
      f.kind = static_cast<Kind>(w.kind());
      // Fields the kind does not use stay absent: the canonical re-encoding
      // below refuses them.
      if (f.kind == Kind::kReplayed) {
        f.replayed_state = digest_field(w.replayed_state(), where + ": replayed_state");
        f.bucket = w.bucket();
        f.gradient_digest = digest_field(w.gradient_digest(), where + ": gradient_digest");
      }
      if (f.kind == Kind::kInvalidOpening) f.check = static_cast<commit::OpeningCheck>(w.check());
      f.environment = {w.framework_version(), w.intra_op_threads(), w.hardware_class()};
      as_state_check(where + ": reveal of " + to_hex(identity), [&] {
        verify_reveal(committed->second, statement(m.id(), c, f), rv.salt, identity);
      });
      if (!c.reveals.emplace(std::move(identity), std::move(rv)).second)
        bad_state(where + ": a witness revealed twice");
    }
    if (m.has_verdict()) {
      if (l.height_ <= l.final_after(c)) bad_state(where + ": final before its last phase closed");
      const ChallengeVerdict v = l.judge(c);
      if (static_cast<int>(m.verdict().verdict()) != static_cast<int>(v.verdict) ||
          m.verdict().cluster_size() != v.cluster_size || m.verdict().cluster_stake() != v.cluster_stake)
        bad_state(where + ": the stored verdict is not the one its reveals yield");
      // The record itself is in the log, whose leaves the state does not
      // keep: the index is checked for range and uniqueness below.
      if (m.verdict().outcome_index() >= l.outcomes_.size())
        bad_state(where + ": an outcome index past the outcome log");
      c.outcome = Final{v.verdict, v.cluster_size, v.cluster_stake, m.verdict().outcome_index()};
      if (v.verdict == Verdict::kFail) r.slashable = true;
    }
    if (!l.challenges_.emplace(m.id(), std::move(c)).second) bad_state(where + " is listed twice");
  }
  // The kept randomness, now that every waiter (sealed runs not drawn,
  // challenges awaiting a redraw) is known.
  for (auto e = l.randomness_.cbegin(); e != l.randomness_.cend(); ++e)
    if (!l.needed(e)) bad_state(fmt::format("randomness of height {} that no run waits for", e->first));
  if (l.last_randomness_)
    for (const auto &[d, count] : l.waiting_)
      if (d <= l.last_randomness_->height && l.randomness_for(d) == l.randomness_.end())
        bad_state(fmt::format("a run waits for the randomness of height {}, which was posted but not kept", d));
  auto kept_differs = [&](const BlockRandomness &used) {
    auto e = l.randomness_.find(used.height);
    return e != l.randomness_.end() && e->second != used.value;
  };
  for (const auto &[run_id, r] : l.runs_)
    if (r.drawn_from && kept_differs(*r.drawn_from))
      bad_state(fmt::format("run {}: drawn from another value than the one kept for its height", run_id.hex()));
  for (const auto &[id, c] : l.challenges_)
    if (c.redrawn_from && kept_differs(*c.redrawn_from))
      bad_state(fmt::format("challenge {}: redrawn from another value than the one kept for its height", id));
  // (A ledger with no task, verifier or randomness may have any height:
  // prune_task removes the last task and leaves the height it was called at.)
  // Every issued challenge is open, final with its run still open, or
  // pruned with its closed run, and each final one was logged once: the
  // log holds exactly the issued challenges that are not open.
  // Each attempt that ended logged one record: a kept challenge's ended
  // attempts are known, a pruned one had 1..max_attempts.
  l.load_disputes(p);
  // Each ended dispute logged one record; the rest are the challenges'.
  if (l.outcomes_.size() < l.ended_disputes())
    bad_state(fmt::format("an outcome log of {} records, for {} ended disputes", l.outcomes_.size(),
                          l.ended_disputes()));
  const uint64_t challenge_records = l.outcomes_.size() - l.ended_disputes();
  uint64_t kept_records = 0;
  std::set<uint64_t> indices;
  for (const auto &[id, c] : l.challenges_) {
    kept_records += c.attempt - 1 + (c.awaiting || c.outcome ? 1 : 0);
    if (c.outcome && !indices.insert(c.outcome->outcome_index).second)
      bad_state(fmt::format("challenge {}: an outcome index another challenge holds", id));
  }
  const uint64_t pruned = l.next_challenge_id_ - l.challenges_.size();  // kept ids are distinct, below it
  auto more_than_the_pruned_could_log = [&](uint64_t x) {  // x > pruned * max_attempts, without overflow
    return x / l.config_.max_attempts + (x % l.config_.max_attempts != 0 ? 1 : 0) > pruned;
  };
  if (challenge_records < kept_records || challenge_records - kept_records < pruned ||
      more_than_the_pruned_could_log(challenge_records - kept_records))
    bad_state(fmt::format("an outcome log of {} challenge records, for {} pruned challenges and {} records of kept ones",
                          challenge_records, pruned, kept_records));
  // A drawn run's challenges are the steps its randomness draws, in round
  // order, under consecutive ids, issued together.
  for (auto &[run_id, r] : l.runs_) {
    if (!r.drawn_from) continue;
    const std::string where = "run " + run_id.hex();
    const auto it = challenges_per_run.find(run_id);
    if (it == challenges_per_run.end()) bad_state(where + ": drawn, but without challenges");
    const std::vector<std::pair<uint64_t, uint64_t>> &got = it->second;  // sorted by id
    const std::vector<uint64_t> steps = challenge::derive_challenges(
        r.drawn_from->value.view(), run_id, r.commitment.declared_steps, l.task_of(r).challenge_rounds);
    bool same_draw = got.size() == steps.size();
    for (size_t i = 0; same_draw && i < got.size(); ++i)
      same_draw = got[i].first == got[0].first + i && got[i].second == steps[i] &&
                  l.challenges_.at(got[i].first).issued_height ==
                      l.challenges_.at(got[0].first).issued_height;
    if (!same_draw) bad_state(where + ": challenges that are not the draw of its randomness");
    // The committees are the draw of the registry as it stood at the
    // value's height (registrations are never removed).
    const std::vector<std::vector<Candidate>> drawn = l.committees_for(
        r, run_id, static_cast<uint32_t>(got.size()), r.drawn_from->height, r.drawn_from->value);
    for (size_t i = 0; i < got.size(); ++i) r.challenge_ids.push_back(got[i].first);
    for (size_t i = 0; i < got.size(); ++i) {
      const Challenge &c = l.challenges_.at(got[i].first);
      // A redrawn committee is the draw of its own randomness without the
      // excluded members; one awaiting a redraw has none.
      const std::vector<Candidate> &from =
          c.awaiting ? std::vector<Candidate>{}
          : c.redrawn_from
              ? draw_committee(c.redrawn_from->value.view(), run_id, static_cast<uint32_t>(i),
                               l.candidates_for(r, c.redrawn_from->height, c.excluded), l.task_of(r).committee_size)
              : drawn[i];
      std::map<Bytes, uint64_t> want;
      for (const Candidate &m : from) want.emplace(m.identity, m.stake);
      if (c.committee != want)
        bad_state(fmt::format("challenge {}: a committee that is not the draw of its randomness", got[i].first));
    }
    if (std::ranges::all_of(r.challenge_ids, [&](uint64_t id) { return l.challenges_.at(id).outcome.has_value(); }))
      bad_state(where + ": every challenge is final, but the run is not closed");
  }
  // Sorted, unique keys, no default values, no unknown fields: all follow
  // from re-encoding the state and comparing.
  if (l.save() != Bytes(b.begin(), b.end())) bad_state("the bytes are not in canonical form");
  return l;
}

// ---- JSON interface ----

namespace {

nlohmann::json randomness_json(const BlockRandomness &r) {
  return {{"height", r.height}, {"value", r.value.hex()}};
}

nlohmann::json verdict_json(const ChallengeVerdict &v) {
  return {{"verdict", verdict_name(v.verdict)},
          {"reason", v.reason},
          {"cluster_size", v.cluster_size},
          {"cluster_stake", v.cluster_stake},
          {"miner_slashable", v.verdict == Verdict::kFail},
          {"cause", cause_name(v.cause)},
          {"minority", identities_json(v.minority)},
          {"silent", identities_json(v.silent)},
          {"misconfigured", identities_json(v.misconfigured)},
          {"unreplayed", identities_json(v.unreplayed)},
          {"outcome", to_hex(v.outcome.encode())},
          {"outcome_index", v.outcome_index}};
}

}  // namespace

nlohmann::json Ledger::apply(const nlohmann::json &call) {
  const codec::JsonFields top(call, "call");
  const std::string name = top.str("call");
  const codec::JsonFields f(call, name);
  nlohmann::json out = {{"ok", true}};
  // Arguments are read into locals first, in the documented order, so a call
  // with several bad arguments always reports the same one.
  if (name == "post_task") {
    f.only({"call", "caller", "now", "task"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const Bytes task = f.hex("task");
    out["task_id"] = post_task(caller, task, now).hex();
  } else if (name == "start_training_commitment") {
    f.only({"call", "caller", "now", "commitment"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const Bytes commitment = f.hex("commitment");
    out["run_id"] = start_training_commitment(caller, commitment, now).hex();
  } else if (name == "post_checkpoint_root") {
    f.only({"call", "caller", "now", "run_id", "size", "root", "consistency_proof"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const Digest run_id = f.digest("run_id");
    const uint64_t size = f.u64("size");
    const Digest root = f.digest("root");
    const Bytes proof = f.hex("consistency_proof");
    post_checkpoint_root(caller, run_id, size, root, proof, now);
    const RunInfo r = run_info(run_id);
    out["latest_size"] = r.latest_size;
    out["sealed"] = r.sealed;
  } else if (name == "post_randomness") {
    f.only({"call", "now", "randomness"});
    const uint64_t now = f.u64("now");
    const Digest randomness = f.digest("randomness");
    post_randomness(randomness, now);
  } else if (name == "register_verifier") {
    f.only({"call", "caller", "now", "stake"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const uint64_t stake = f.u64("stake");
    register_verifier(caller, stake, now);
  } else if (name == "issue_challenge") {
    f.only({"call", "now", "run_id"});
    const uint64_t now = f.u64("now");
    const Digest run_id = f.digest("run_id");
    const std::vector<uint64_t> ids = issue_challenge(run_id, now);
    nlohmann::json steps = nlohmann::json::array();
    for (uint64_t id : ids) steps.push_back(challenges_.at(id).step);
    out["challenge_ids"] = ids;
    out["steps"] = std::move(steps);
  } else if (name == "submit_opening") {
    f.only({"call", "caller", "now", "challenge_id", "manifest_digest", "step_leaf", "leaf_proof"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("challenge_id");
    const Digest manifest = f.digest("manifest_digest");
    const Bytes leaf = f.hex("step_leaf");
    const Bytes proof = f.hex("leaf_proof");
    submit_opening(caller, id, manifest, leaf, proof, now);
  } else if (name == "commit_witness") {
    f.only({"call", "caller", "now", "challenge_id", "commitment"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("challenge_id");
    const Digest commitment = f.digest("commitment");
    commit_witness(caller, id, commitment, now);
  } else if (name == "reveal_witness_value") {
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("challenge_id");
    const witness::Finding finding =
        witness::Finding::from_json(call, name, {"call", "caller", "now", "challenge_id", "salt"});
    const Bytes salt = f.hex("salt");
    reveal_witness_value(caller, id, finding, salt, now);
  } else if (name == "finalize_challenge") {
    f.only({"call", "now", "challenge_id"});
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("challenge_id");
    const ChallengeVerdict v = finalize_challenge(id, now);
    out.update(verdict_json(v));
    out["outcome_root"] = outcomes_.root().hex();  // after the append: the log of outcome_index + 1 records
    out["run_closed"] = closed_.contains(v.outcome.run_id);
    out["rerun"] = v.rerun;
  } else if (name == "redraw_committee") {
    f.only({"call", "now", "challenge_id"});
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("challenge_id");
    redraw_committee(id, now);
    const ChallengeInfo c = challenge_info(id);
    nlohmann::json committee = nlohmann::json::array();
    for (const MemberInfo &m : c.committee) committee.push_back({{"identity", to_hex(m.identity)}, {"stake", m.stake}});
    out["attempt"] = c.attempt;
    out["committee"] = std::move(committee);
    out["commit_deadline"] = c.commit_deadline;
  } else if (name == "prune_task") {
    f.only({"call", "now", "task_id"});
    const uint64_t now = f.u64("now");
    const Digest id = f.digest("task_id");
    const PrunedTask p = prune_task(id, now);
    out["closed_runs"] = p.closed_runs;
    out["void_runs"] = p.void_runs;
  } else if (auto result = apply_dispute(name, call)) {
    out.update(*result);
  } else if (name == "task_info") {
    f.only({"call", "task_id"});
    const Digest id = f.digest("task_id");
    const task::Task t = task_info(id);
    out["task_id"] = id.hex();
    out["task"] = t.to_json();
  } else if (name == "run_info") {
    f.only({"call", "run_id"});
    const RunInfo r = run_info(f.digest("run_id"));
    const nlohmann::json null;
    out["run_id"] = r.run_id.hex();
    out["task_id"] = r.task_id.hex();
    out["miner_identity"] = to_hex(r.miner_identity);
    // A closed run keeps its key, its slashable flag and its final root.
    const bool kept = !r.closed;
    out["declared_steps"] = r.declared_steps;
    out["latest_size"] = r.latest_size;
    out["latest_root"] = r.latest_size > 0 ? nlohmann::json(r.latest_root.hex()) : null;
    out["sealed"] = r.sealed;
    out["seal_height"] = kept && r.sealed ? nlohmann::json(r.seal_height) : null;
    out["draw_height"] = kept && r.sealed ? nlohmann::json(r.draw_height) : null;
    out["drawn_from"] = r.drawn_from ? randomness_json(*r.drawn_from) : null;
    out["slashable"] = r.slashable;
    out["closed"] = r.closed;
  } else if (name == "challenge_info") {
    f.only({"call", "challenge_id"});
    const ChallengeInfo c = challenge_info(f.u64("challenge_id"));
    const nlohmann::json null;
    out["challenge_id"] = c.id;
    out["run_id"] = c.run_id.hex();
    out["step"] = c.step;
    out["mode"] = mode_name(c.mode);
    out["issued_height"] = c.issued_height;
    out["opening_deadline"] = c.opening_deadline;
    out["opened"] = c.opened;
    out["opened_height"] = c.opened ? nlohmann::json(c.opened_height) : null;
    out["commit_deadline"] = c.opened ? nlohmann::json(c.commit_deadline) : null;
    out["reveal_deadline"] = c.opened ? nlohmann::json(c.reveal_deadline) : null;
    out["manifest_digest"] = c.opened ? nlohmann::json(c.manifest_digest.hex()) : null;
    out["opened_state"] = c.opened ? nlohmann::json(c.opened_state.hex()) : null;
    out["opened_update_norm"] = c.opened ? nlohmann::json(c.opened_update_norm) : null;
    out["committed_bucket"] = c.committed_bucket ? nlohmann::json(*c.committed_bucket) : null;
    nlohmann::json committee = nlohmann::json::array();
    for (const MemberInfo &m : c.committee)
      committee.push_back({{"identity", to_hex(m.identity)},
                           {"stake", m.stake},
                           {"committed", m.committed},
                           {"revealed", m.revealed}});
    out["committee"] = std::move(committee);
    out["committee_stake"] = c.committee_stake;
    out["attempt"] = c.attempt;
    out["awaiting_redraw_from"] = c.awaiting_redraw_from ? nlohmann::json(*c.awaiting_redraw_from) : null;
    out["redrawn_from"] = c.redrawn_from ? randomness_json(*c.redrawn_from) : null;
    nlohmann::json excluded = nlohmann::json::array();
    for (const Bytes &b : c.excluded) excluded.push_back(to_hex(b));
    out["excluded"] = std::move(excluded);
    out["witness_commits"] = c.witness_commits;
    out["witness_reveals"] = c.witness_reveals;
    out["final"] = c.verdict.has_value();
    if (c.verdict) {
      out.update(verdict_json(*c.verdict));
    } else {
      // Every key a verdict has, null until final.
      const nlohmann::json keys = verdict_json(ChallengeVerdict{});
      for (auto it = keys.begin(); it != keys.end(); ++it) out[it.key()] = null;
    }
  } else if (name == "verifier_info") {
    f.only({"call", "identity"});
    const VerifierInfo v = verifier_info(f.hex("identity"));
    out["identity"] = to_hex(v.identity);
    out["stake"] = v.stake;
    out["registered_height"] = v.registered_height;
  } else if (name == "ledger_info") {
    f.only({"call"});
    out["config"] = config_.to_json();
    out["height"] = height_;
    out["verifiers"] = verifiers_.size();
    out["total_stake"] = total_stake_;
    out["latest_randomness"] =
        last_randomness_ ? randomness_json(*last_randomness_) : nlohmann::json(nullptr);
    out["outcome_count"] = outcomes_.size();
    out["outcome_root"] = outcomes_.root().hex();
    out["tasks"] = tasks_.size();
    out["open_runs"] = runs_.size();
    out["closed_runs"] = closed_.size();
    out["kept_challenges"] = challenges_.size();  // open, or final with their run still open
    out["open_disputes"] = disputes_.size();
  } else {
    fail(Status::kInvalidArgument, "call: unknown call \"{}\"", name);
  }
  return out;
}

}  // namespace pot::game
