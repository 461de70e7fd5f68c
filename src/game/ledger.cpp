// The ledger's rules (docs/ledger.md section 2): the calls of tasks, runs,
// randomness, challenges, committees and witnesses, the verdict, and the
// queries. The dispute calls are in ledger_disputes.cpp and
// ledger_operators.cpp, the saved state in ledger_state.cpp, the JSON
// interface in ledger_json.cpp.
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
#include "statecheck/state_flags.h"
#include "witness/norm_bucket.h"

namespace pot::game {

using hash::Digest;
using witness::Kind;
using witness::verify_reveal;
using namespace ledger_util;

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
  need(task_bond, "task_bond");
  need(miner_bond, "miner_bond");
  need(dispute_bond, "dispute_bond");
  need(max_task_blocks, "max_task_blocks");
  need(max_open_tasks, "max_open_tasks");
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
  if (tasks_.contains(id)) {
    height_ = now;
    return id;
  }
  // A new task is bonded and bounded (section 2.18): it ends within
  // max_task_blocks, its owner holds fewer than max_open_tasks, and its bond
  // is free.
  if (t.end_height - now > config_.max_task_blocks)
    fail(Status::kOutOfRange, "{}: the task ends at height {}, {} blocks from now ({}); this ledger takes tasks of "
         "at most {} blocks", kCall, t.end_height, t.end_height - now, now, config_.max_task_blocks);
  const auto held = open_tasks_.find(t.owner);
  if (held != open_tasks_.end() && held->second >= config_.max_open_tasks)
    fail(Status::kLimit, "{}: owner {} holds {} tasks, the most this ledger allows; prune an ended one first",
         kCall, to_hex(t.owner), held->second);
  book_.check_free(caller, config_.task_bond, kCall, "the task bond");
  std::map<Bytes, uint32_t> owner_node;
  if (held == open_tasks_.end()) owner_node.emplace(t.owner, 0);
  std::map<Digest, TaskRecord> node;
  node.emplace(id, TaskRecord{to_bytes(task), std::move(t)});
  // Nothing below allocates or throws.
  tasks_.merge(node);
  open_tasks_.merge(owner_node);
  ++open_tasks_.at(tasks_.at(id).task.owner);
  book_.lock(caller, config_.task_bond);
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
  if (task->second.program_fault)
    fail(Status::kState, "{}: a committee found the program of task {} at fault (check 30 task_program): it takes no "
         "new runs", kCall, c.task_id.hex());
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
  // A commitment names its task and its miner, so a free key means a new run
  // id, and a new run is bonded (section 2.18).
  book_.check_free(caller, config_.miner_bond, kCall, "the miner bond");
  std::map<Digest, Run> run_node;
  Run &r = run_node[run_id];
  r.commitment_bytes = to_bytes(commitment);
  r.commitment = std::move(c);
  std::map<RunKey, Digest> key_node;
  key_node.emplace(std::move(key), run_id);
  runs_.merge(run_node);
  run_keys_.merge(key_node);
  book_.lock(caller, config_.miner_bond);
  height_ = now;
  return run_id;
}

std::optional<Digest> Ledger::check_seal(const Run &r, const Digest &run_id, uint64_t size, const Digest &root,
                                         const SealPost &seal) const {
  constexpr const char *kCall = "post_checkpoint_root";
  const uint64_t n = r.commitment.declared_steps;
  const std::vector<uint64_t> &flagged = seal.flagged_steps;
  const bool seals = size == n;
  if (!seals && !flagged.empty())
    fail(Status::kInvalidArgument, "{}: only the sealing post (size {}) carries flagged steps, not size {}", kCall,
         n, size);
  if (flagged.size() > task_of(r).challenge_rounds)
    fail(Status::kLimit,
         "{}: {} flagged steps, the task challenges at most {} (its rounds) for certain; a run whose statistics "
         "flag more is not one honest training makes",
         kCall, flagged.size(), task_of(r).challenge_rounds);
  if (const auto i = statecheck::misplaced_step(flagged, n))
    fail(Status::kInvalidArgument, "{}: flagged steps must ascend within 1..{}; element {} is {}", kCall, n, *i,
         flagged[*i]);
  // A task whose runs are one trajectory pays it once: the sealing post
  // shows the run's final state, which no other run of the task may have.
  const bool one = task_of(r).one_trajectory();
  if (!(seals && one)) {
    if (!seal.final_leaf.empty() || !seal.final_leaf_proof.empty())
      fail(Status::kInvalidArgument,
           "{}: only the sealing post of a run of a one-trajectory task carries the final leaf", kCall);
    return std::nullopt;
  }
  if (seal.final_leaf.empty())
    fail(Status::kInvalidArgument,
         "{}: the task's runs are one trajectory (a listed schedule without per-run randomness): its sealing post "
         "carries the final leaf (step {}) and its proof, so that the trajectory is paid once",
         kCall, n);
  const commit::StepLeaf leaf = commit::StepLeaf::decode(seal.final_leaf);
  if (leaf.run_id != run_id || leaf.step != n)
    fail(Status::kInvalidArgument, "{}: the final leaf names step {} of run {}, not step {} of {}", kCall, leaf.step,
         leaf.run_id.hex(), n, run_id.hex());
  merkle::verify_inclusion(n - 1, n, hash::leaf_hash(seal.final_leaf).view(),
                           merkle::decode_proof(seal.final_leaf_proof), root.view());
  for (const auto &[other_id, other] : runs_)
    if (other_id != run_id && other.final_state == leaf.state_digest &&
        other.commitment.task_id == r.commitment.task_id)
      fail(Status::kConflict,
           "{}: run {} of the task sealed with the same final state {}: a one-trajectory task pays a trajectory "
           "once (a copy, or one training under two identities)",
           kCall, other_id.hex(), leaf.state_digest.hex());
  return leaf.state_digest;
}

void Ledger::post_checkpoint_root(ByteView caller, const Digest &run_id, uint64_t size,
                                  const Digest &root, ByteView consistency_proof, uint64_t now,
                                  const SealPost &seal) {
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
  const std::optional<Digest> final_state = check_seal(r, run_id, size, root, seal);
  if (seals && config_.draw_delay > UINT64_MAX - now)
    fail(Status::kOutOfRange, "{}: the draw height of a run sealed at height {} does not fit 64 bits",
         kCall, now);
  std::vector<uint64_t> flagged = seal.flagged_steps;  // may allocate
  if (seals) ++waiting_[now + config_.draw_delay];  // the last step that may allocate
  r.latest_size = size;
  r.latest_root = root;
  if (seals) {
    r.seal_height = now;
    r.flagged_steps = std::move(flagged);
    r.final_state = final_state;
  }
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

std::vector<uint64_t> Ledger::challenged_steps(const Run &r, const Digest &run_id, const Digest &value) const {
  // rounds <= min_steps <= n holds by the task's rules.
  std::vector<uint64_t> steps =
      challenge::derive_challenges(value.view(), run_id, r.commitment.declared_steps, task_of(r).challenge_rounds);
  // Challenged whatever the draw, ascending: step 1, whose flags nobody can
  // evaluate (S_0's table is bound by no leaf), and every flagged step, so
  // the step that poisons a state is replayed for certain (docs/PROTOCOL.md
  // 5.3, docs/ledger.md 2.4).
  std::set<uint64_t> certain(r.flagged_steps.begin(), r.flagged_steps.end());
  certain.insert(1);
  for (uint64_t s : steps) certain.erase(s);
  steps.insert(steps.end(), certain.begin(), certain.end());
  return steps;
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
  // No state of a one-trajectory task's run is opened while another run
  // could still seal: a copy would be the same trajectory as the original.
  if (t.one_trajectory() && now <= t.end_height)
    fail(Status::kState,
         "{}: run {} is of a one-trajectory task, drawn after the task's end height {}, when every run of it is "
         "sealed or void",
         kCall, run_id.hex(), t.end_height);
  const Mode mode = t.challenge_mode == task::ChallengeMode::kNormBucket ? Mode::kNormBucket : Mode::kBitwise;
  const std::vector<uint64_t> steps = challenged_steps(r, run_id, entry->second);
  const uint64_t rounds = steps.size();  // at most twice the task's rounds, plus one
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

namespace {

// One committee member's reveal, as the verdict weighs it.
struct Ballot {
  const witness::Finding *finding = nullptr;
  uint64_t stake = 0;
  bool counted = false;  // its environment and its own inputs can judge the step (Ledger::misconfigured)
};

// The reveals of one opened challenge, sorted by what they say (docs/ledger.md
// section 2.9). Each counted reveal either agrees with the opened step (a
// replayed value equal to its state digest; in norm-bucket mode a bucket
// adjacent to the committed one), or blames the miner: a replayed value that
// differs, or no valid opening served to the member (unavailable, or a
// failed check).
class Tally {
 public:
  Tally(Mode mode, const Digest &opened_state, std::optional<int64_t> committed_bucket,
        const std::map<Bytes, Ballot> &ballots)
      : mode_(mode), opened_state_(opened_state), committed_bucket_(committed_bucket) {
    find_replayed_gradient(ballots);
    for (const auto &[identity, b] : ballots) add(b);
    for (auto it = other_.begin(); it != other_.end(); ++it) {
      other_stake += it->second.first;
      blame_count += it->second.second;
      if (best_ == other_.end() || it->second.first > best_->second.first) best_ = it;
    }
    blame_stake = other_stake + unserved_stake;  // fits: parts of the committee's stake
    blame_count += unserved_count;
  }

  static bool replayed(const Ballot &b) { return b.finding->kind == Kind::kReplayed; }
  // Check 30: the task's program, not the miner, decides the step. Such a
  // reveal blames neither side of the step: it blames the task.
  static bool blames_task(const Ballot &b) {
    return b.counted && b.finding->kind == Kind::kInvalidOpening &&
           b.finding->check == commit::OpeningCheck::kTaskProgram;
  }
  bool matches(const Ballot &b) const {
    if (!b.counted || !replayed(b)) return false;
    return mode_ == Mode::kBitwise ? b.finding->replayed_state == opened_state_
                                   : witness::buckets_match(*committed_bucket_, b.finding->bucket);
  }
  // Bitwise, a replay also gives the step's gradient, which the miner never
  // publishes: members stating the opened state agree only with the
  // gradient most of their stake replayed. The others stated a value they
  // could copy without replaying (attack 5): recorded, not counted. Across
  // architectures gradients differ in their bits, so norm-bucket mode
  // cannot tell.
  bool unreplayed(const Ballot &b) const {
    return matches(b) && replayed_gradient_ && b.finding->gradient_digest != *replayed_gradient_;
  }
  bool agrees(const Ballot &b) const { return matches(b) && !unreplayed(b); }
  static bool unserved(const Ballot &b) { return b.counted && !replayed(b) && !blames_task(b); }
  // Of the deciding group when the miner is blamed.
  bool blames(const Ballot &b) const { return b.counted && !agrees(b) && !unreplayed(b) && !blames_task(b); }

  const char *reference() const {
    return mode_ == Mode::kBitwise ? "the opened state digest" : "the committed bucket";
  }
  // The replayed values other than the opened one, for a FAIL's reason.
  std::string other_values() const {
    if (other_stake == 0) return "";
    std::string what = mode_ == Mode::kBitwise ? "replayed digest " + best_->first.first.hex()
                                               : fmt::format("replayed bucket {}", best_->first.second);
    const uint64_t best_stake = best_->second.first;
    what += fmt::format(" (stake {}", best_stake);
    if (other_stake > best_stake) what += fmt::format("; other values, stake {}", other_stake - best_stake);
    return what + fmt::format("), not {}", reference());
  }

  uint64_t agree_stake = 0, agree_count = 0;
  uint64_t unserved_stake = 0, unserved_count = 0;
  uint64_t other_stake = 0;  // replayed values other than the opened one
  uint64_t blame_stake = 0, blame_count = 0;  // other values and unserved members
  uint64_t excluded_stake = 0;  // misconfigured or unreplayed
  uint64_t task_stake = 0, task_count = 0;  // check 30: the task's program at fault

 private:
  // What a replayed value is compared by: its digest, or its bucket.
  using Value = std::pair<Digest, int64_t>;

  void find_replayed_gradient(const std::map<Bytes, Ballot> &ballots) {
    if (mode_ != Mode::kBitwise) return;
    std::map<Digest, uint64_t> gradients;  // gradient digest -> stake
    for (const auto &[identity, b] : ballots)
      if (matches(b)) gradients[b.finding->gradient_digest] += b.stake;
    for (const auto &[g, stake] : gradients)
      if (!replayed_gradient_ || stake > gradients.at(*replayed_gradient_)) replayed_gradient_ = g;
  }

  void add(const Ballot &b) {
    if (!b.counted || unreplayed(b)) {
      excluded_stake += b.stake;
    } else if (agrees(b)) {
      agree_stake += b.stake;
      ++agree_count;
    } else if (blames_task(b)) {
      task_stake += b.stake;
      ++task_count;
    } else if (unserved(b)) {
      unserved_stake += b.stake;
      ++unserved_count;
    } else {
      auto &o = other_[mode_ == Mode::kBitwise ? Value{b.finding->replayed_state, 0} : Value{Digest{}, b.finding->bucket}];
      o.first += b.stake;
      ++o.second;
    }
  }

  Mode mode_;
  Digest opened_state_;
  std::optional<int64_t> committed_bucket_;
  std::optional<Digest> replayed_gradient_;
  std::map<Value, std::pair<uint64_t, uint64_t>> other_;  // value -> (stake, count)
  std::map<Value, std::pair<uint64_t, uint64_t>>::const_iterator best_ = other_.end();
};

// Who answers for the outcome: members outside the deciding group (when one
// decides), members that never revealed, members whose environment could
// not judge the step, members that stated the opened state with a gradient
// the others did not replay.
ChallengeVerdict account(ChallengeVerdict v, const std::map<Bytes, uint64_t> &committee,
                         const std::map<Bytes, Ballot> &ballots, const Tally &t,
                         const std::function<bool(const Ballot &)> &deciding) {
  for (const auto &[identity, stake] : committee) {
    auto b = ballots.find(identity);
    if (b == ballots.end())
      v.silent.push_back(identity);
    else if (!b->second.counted)
      v.misconfigured.push_back(identity);
    else if (t.unreplayed(b->second))
      v.unreplayed.push_back(identity);
    else if (deciding && !deciding(b->second))
      v.minority.push_back(identity);
  }
  return v;
}

}  // namespace

ChallengeVerdict Ledger::judge(const Challenge &c) const {
  if (!c.opening)
    return {.verdict = Verdict::kFail, .reason = "no opening within the opening window", .cause = Cause::kNoOpening};
  uint64_t committee_stake = 0;  // fits: the registry's stakes sum below 2^64
  for (const auto &[identity, stake] : c.committee) committee_stake += stake;
  if (committee_stake == 0)
    return {.verdict = Verdict::kInconclusive,
            .reason = "no committee: no verifier was registered before the draw",
            .cause = Cause::kNoCommittee};
  std::map<Bytes, Ballot> ballots;
  for (const auto &[identity, r] : c.reveals)
    ballots.emplace(identity, Ballot{&r.finding, c.committee.at(identity), !misconfigured(c, r)});
  const Tally t(c.mode, c.opening->state_digest, committed_bucket(c), ballots);
  // A strict majority of the committee's stake, revealed or not, decides.
  if (t.agree_stake > committee_stake - t.agree_stake)
    return account({.verdict = Verdict::kPass,
                    .reason = fmt::format("members holding {} of the committee's stake {} agree with {}",
                                          t.agree_stake, committee_stake, t.reference()),
                    .cluster_size = t.agree_count,
                    .cluster_stake = t.agree_stake,
                    .cause = Cause::kAgreement},
                   c.committee, ballots, t, [&](const Ballot &b) { return t.agrees(b); });
  // The miner chooses whom it serves an opening: members it served a forged
  // step replay another value than the opened one, the others were served
  // nothing valid; all blame it, and together they decide. (With an honest
  // majority their values are one; which of several wrong values is right
  // is the dispute game's question, not the verdict's.)
  if (t.blame_stake > committee_stake - t.blame_stake) {
    std::string what = t.other_values();
    if (t.unserved_stake > 0)
      what += fmt::format("{}were served no valid opening (stake {})", what.empty() ? "" : "; ", t.unserved_stake);
    return account({.verdict = Verdict::kFail,
                    .reason = fmt::format("members holding {} of the committee's stake {} blame the miner: {}",
                                          t.blame_stake, committee_stake, what),
                    .cluster_size = t.blame_count,
                    .cluster_stake = t.blame_stake,
                    .cause = Cause::kBlame},
                   c.committee, ballots, t, [&](const Ballot &b) { return t.blames(b); });
  }
  // The task's program makes the step what it is (check 30): neither a
  // PASS nor the miner's FAIL, and no new committee would judge it
  // otherwise. The task answers for it (docs/ledger.md 2.9, 2.18).
  if (t.task_stake > committee_stake - t.task_stake)
    return account({.verdict = Verdict::kInconclusive,
                    .reason = fmt::format("members holding {} of the committee's stake {} find the task's program "
                                          "at fault (check 30 task_program), not the miner",
                                          t.task_stake, committee_stake),
                    .cluster_size = t.task_count,
                    .cluster_stake = t.task_stake,
                    .cause = Cause::kTaskProgram},
                   c.committee, ballots, t, [&](const Ballot &b) { return Tally::blames_task(b); });
  const bool agree_larger = t.agree_stake >= t.blame_stake;
  const uint64_t counted = t.agree_stake + t.blame_stake + t.task_stake;  // parts of the committee's stake
  const uint64_t unrevealed = committee_stake - counted - t.excluded_stake;
  return account(
      {.verdict = Verdict::kInconclusive,
       .reason = fmt::format("no side holds a majority of the committee's stake {}: {} agree with {}, {} blame the "
                             "miner ({} replayed other values, {} served no valid opening), {}{} misconfigured or "
                             "unreplayed, {} unrevealed",
                             committee_stake, t.agree_stake, t.reference(), t.blame_stake, t.other_stake,
                             t.unserved_stake,
                             t.task_stake ? fmt::format("{} blame the task's program, ", t.task_stake) : "",
                             t.excluded_stake, unrevealed),
       .cluster_size = agree_larger ? t.agree_count : t.blame_count,
       .cluster_stake = agree_larger ? t.agree_stake : t.blame_stake,
       .cause = counted > committee_stake - counted ? Cause::kSplit : Cause::kParticipation},
      c.committee, ballots, t, nullptr);
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
  // The first slashing burns the miner's bond (section 2.18): nobody
  // profits from a FAIL, so a coalition of verifiers gains nothing by one.
  if (v.verdict == Verdict::kFail && holds_bond(r.slashable))
    book_.burn(r.commitment.miner_identity, config_.miner_bond);
  if (v.verdict == Verdict::kFail) r.slashable = true;
  // A committee that finds the task's program at fault burns its owner's
  // bond (once) and closes the task to new runs (section 2.18).
  if (v.cause == Cause::kTaskProgram) {
    TaskRecord &task = tasks_.at(r.commitment.task_id);
    if (!task.program_fault) book_.burn(task.task.owner, config_.task_bond);
    task.program_fault = true;
  }
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
    const auto closed = closed_.find(last->second);
    if (closed != closed_.end()) {
      ++out.closed_runs;
      if (holds_bond(closed->second.slashable)) out.released += config_.miner_bond;
    } else if (runs_.at(last->second).sealed()) {
      fail(Status::kState, "{}: run {} of task {} is sealed and not closed: its challenges are not all final", kCall,
           last->second.hex(), task_id.hex());
    } else {
      ++out.void_runs;  // never sealed by the end: no roots can come, no challenge or dispute
      out.released += config_.miner_bond;
    }
    // The bonds go back only once no dispute can move them.
    for (const auto &[id, d] : disputes_)
      if (d.run_id == last->second)
        fail(Status::kState, "{}: dispute {} of run {} is open; the task's bonds stay locked until it ends", kCall,
             id, last->second.hex());
  }
  if (!task->second.program_fault) out.released += config_.task_bond;  // a faulted task's bond burned
  // Erasing and releasing do not allocate: nothing below can fail.
  for (auto it = first; it != last; ++it) {
    const auto closed = closed_.find(it->second);
    if (closed == closed_.end()) {
      book_.release(it->first.second, config_.miner_bond);
      runs_.erase(it->second);
    } else {
      if (holds_bond(closed->second.slashable)) book_.release(it->first.second, config_.miner_bond);
      closed_.erase(closed);
    }
  }
  run_keys_.erase(first, last);
  const Bytes &owner = task->second.task.owner;
  if (!task->second.program_fault) book_.release(owner, config_.task_bond);
  if (const auto held = open_tasks_.find(owner); --held->second == 0) open_tasks_.erase(held);
  tasks_.erase(task);
  height_ = now;
  return out;
}

task::Task Ledger::task_info(const Digest &task_id) const {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) fail(Status::kNotFound, "task_info: no task {}", task_id.hex());
  return it->second.task;
}

bool Ledger::task_program_fault(const Digest &task_id) const {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) fail(Status::kNotFound, "task_info: no task {}", task_id.hex());
  return it->second.program_fault;
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
  i.flagged_steps = r.flagged_steps;
  i.final_state = r.final_state;
  i.slashable = r.slashable;
  return i;
}

LedgerSummary Ledger::summary() const {
  return {.verifiers = verifiers_.size(),
          .total_stake = total_stake_,
          .latest_randomness = last_randomness_,
          .tasks = tasks_.size(),
          .open_runs = runs_.size(),
          .closed_runs = closed_.size(),
          .kept_challenges = challenges_.size(),
          .open_disputes = disputes_.size(),
          .held = book_.held(),
          .burned = book_.burned()};
}

VerifierInfo Ledger::verifier_info(ByteView identity) const {
  auto it = verifiers_.find(to_bytes(identity));
  if (it == verifiers_.end()) fail(Status::kNotFound, "verifier_info: no verifier {}", to_hex(identity));
  return {.identity = it->first, .stake = it->second.stake, .registered_height = it->second.registered_height};
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

}  // namespace pot::game
