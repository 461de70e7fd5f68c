// The reference ledger (docs/ledger.md): a deterministic state machine with
// the semantics of the on-chain calls (tasks, start_training_commitment, root
// posts, the chain's randomness, challenges and committees drawn from it,
// openings, witness commit/reveal, finalization into the outcome log,
// committee redraws), for chain teams to embed or mirror. Time is
// the block height each call carries. Every refused call throws pot::Error with a
// status naming the broken rule and leaves the state exactly as it was; the
// state serialises to a canonical pot.v2.LedgerState encoding.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bond/book.h"
#include "common/heights.h"
#include "commit/commitment.h"
#include "dispute/op_referee.h"
#include "dispute/timed.h"
#include "game/committee.h"
#include "game/dispute_record.h"
#include "game/outcome.h"
#include "hash/sha256.h"
#include "merkle/log.h"
#include "task/task.h"
#include "witness/witness.h"

namespace pot::v2 {
class LedgerState;
}

namespace pot::game {

using witness::kMaxIdentity;
using witness::Mode;
using witness::Verdict;

// The largest saved state load accepts (and save produces).
inline constexpr size_t kMaxLedgerStateBytes = size_t{64} << 20;
// The largest node opening open_node takes (docs/ledger.md 2.16).
inline constexpr size_t kMaxLedgerOpeningBytes = size_t{64} << 20;
// The most committees one challenge may get (LedgerConfig::max_attempts).
inline constexpr uint32_t kMaxAttempts = 16;

struct LedgerConfig {
  uint64_t draw_delay = 1;      // blocks from a run's seal to the randomness its challenges use
  uint64_t opening_window = 1;  // blocks from issue to the end of the opening phase
  uint64_t commit_window = 1;   // blocks from the opening to the end of the commit phase
  uint64_t reveal_window = 1;   // blocks from there to the end of the reveal phase
  uint32_t max_committee_size = 1;  // the largest committee a task may ask for, 1..kMaxCommitteeSize
  uint64_t min_stake = 1;       // the least stake a verifier registers with
  uint32_t max_rounds = 1;      // the most challenge rounds a task may ask for
  // The most committees a challenge gets (1..kMaxAttempts): an attempt that
  // ends INCONCLUSIVE for want of participation is re-run with a new
  // committee while attempts remain (1: never).
  uint32_t max_attempts = 1;
  // Disputes (docs/ledger.md 2.12): the blocks each bisection round lasts,
  // counted from the claim that completed the last round, and the arity of
  // the bisection (2..256: arity - 1 claims per party per round).
  uint64_t dispute_window = 1;
  uint32_t dispute_arity = 2;
  // The referee (docs/ledger.md 2.17): the one identity that rules on an
  // operator dispute where the ledger cannot (rules 3 and 4, batch
  // sources). Empty: no referee, and a dispute ends when its step is found.
  Bytes referee;
  // Bonds and bounds (docs/ledger.md 2.18), locked from the free balance
  // of the identity that makes the call: post_task locks task_bond until
  // prune_task; start_training_commitment locks miner_bond until
  // prune_task (a FAIL burns it, a dispute the miner loses pays the
  // challenger's costs from it and burns the rest); open_dispute locks dispute_bond until the dispute ends
  // (paid to the miner when the challenger alone loses). A task ends at
  // most max_task_blocks after its post; an owner holds at most
  // max_open_tasks tasks at once; a miner may answer a dispute up to
  // miner_grace blocks past each deadline (0: none). These C++ defaults are
  // the loosest valid values (the least bonds, no bounds, no grace), for
  // tests; the JSON form has no defaults: a chain states all six.
  uint64_t task_bond = 1;
  uint64_t miner_bond = 1;
  uint64_t dispute_bond = 1;
  uint64_t max_task_blocks = UINT64_MAX;
  uint32_t max_open_tasks = UINT32_MAX;
  uint64_t miner_grace = 0;

  // kInvalidArgument unless every field but miner_grace is >= 1,
  // max_committee_size is at most kMaxCommitteeSize, max_attempts at most
  // kMaxAttempts, dispute_arity in 2..256 and the referee at most 256
  // bytes.
  void validate() const;
  // Whether a challenge issued at `height` has deadlines (opening, commit,
  // reveal) that fit 64 bits, however late in its window it is opened.
  bool deadlines_fit(uint64_t height) const {
    return opening_window <= UINT64_MAX - height && commit_window <= UINT64_MAX - height - opening_window &&
           reveal_window <= UINT64_MAX - height - opening_window - commit_window;
  }
  // The JSON form (docs/ledger.md section 1): an object with exactly these
  // keys, every one an integer, and optionally "referee" (hex, 1..256
  // bytes); kInvalidArgument naming the key otherwise (a config of pot 0.2,
  // without the six bond keys, is refused naming the first missing one).
  static LedgerConfig from_json(const nlohmann::json &j);
  nlohmann::json to_json() const;
  bool operator==(const LedgerConfig &) const = default;
};

// What the sealing post_checkpoint_root carries besides the root
// (docs/ledger.md 2.3).
struct SealPost {
  // The steps the run's statistics flag (docs/PROTOCOL.md 5.3), ascending,
  // at most the task's challenge rounds: each challenged for certain.
  std::vector<uint64_t> flagged_steps;
  // A one-trajectory task's run (task::Task::one_trajectory): its leaf of
  // the last step and the leaf's inclusion proof in the sealing root; no
  // other run of the task may seal with the same final state.
  Bytes final_leaf;
  Bytes final_leaf_proof;
};

// The chain's randomness of one block (docs/ledger.md section 2.4).
struct BlockRandomness {
  uint64_t height = 0;
  hash::Digest value;
  bool operator==(const BlockRandomness &) const = default;
};

struct RunInfo {
  hash::Digest run_id;
  hash::Digest task_id;
  Bytes miner_identity;
  uint64_t declared_steps = 0;
  uint64_t latest_size = 0;  // 0 before the first root is posted
  hash::Digest latest_root;  // all zero while latest_size == 0
  bool sealed = false;       // latest_size == declared_steps
  uint64_t seal_height = 0;  // when sealed: the height of the sealing post
  uint64_t draw_height = 0;  // when sealed: seal_height + draw_delay
  // Once its challenges are issued: the randomness they were drawn from
  // (the first posted at a height >= draw_height).
  std::optional<BlockRandomness> drawn_from;
  // When sealed: the steps its statistics flag, as the miner sealed it
  // (docs/ledger.md 2.3), each challenged for certain; empty once closed.
  std::vector<uint64_t> flagged_steps;
  // When sealed, of a one-trajectory task: the digest of its final state,
  // which no other run of the task may seal with; nullopt otherwise and
  // once closed.
  std::optional<hash::Digest> final_state;
  // Some challenge of the run finalized FAIL, or a dispute of the run ended
  // naming the miner a loser (docs/ledger.md 2.14).
  bool slashable = false;
  // Every challenge of the run is final, and the ledger pruned them with
  // the run's record (docs/ledger.md section 2.9): run_id, task_id,
  // miner_identity, slashable, declared_steps, latest_size (=
  // declared_steps) and latest_root are kept; seal_height, draw_height and
  // drawn_from read 0 and nullopt.
  bool closed = false;
};

// What prune_task removed besides the task.
struct PrunedTask {
  uint64_t closed_runs = 0;  // closed runs (their keys, slashable flags and roots)
  uint64_t void_runs = 0;    // runs never sealed by the task's end_height
  uint64_t released = 0;     // bonds given back: the task's and its unslashed runs'
};

struct ChallengeVerdict {
  Verdict verdict = Verdict::kInconclusive;
  std::string reason;
  uint64_t cluster_size = 0;   // reveals in the deciding cluster (the largest by stake when none decides)
  uint64_t cluster_stake = 0;  // their committee stake
  // The outcome's accountability (derived, docs/ledger.md section 2.9): the
  // members whose reveal was outside the deciding group (PASS or FAIL
  // only), and the members that never revealed, each sorted by identity.
  std::vector<Bytes> minority;
  std::vector<Bytes> silent;
  // Members whose revealed environment cannot judge the step in the
  // challenge's mode (witness::environment_mismatch), or whose statement
  // names a failed check of their own inputs (spec, program: the task's):
  // their statements are not counted, whatever they say.
  std::vector<Bytes> misconfigured;
  // Bitwise mode: members that stated the opened state with another
  // gradient than the one most of the agreeing stake replayed: a value
  // they could copy without replaying (attack 5). Not counted.
  std::vector<Bytes> unreplayed;
  // Why the verdict is what it is (derived): PASS kAgreement; FAIL
  // kNoOpening or kBlame; INCONCLUSIVE kNoCommittee, kParticipation (the
  // counted reveals hold at most half of the committee's stake: too many
  // members silent, misconfigured or unreplayed) or kSplit (they hold more,
  // but neither side a majority). A participation failure is one a new
  // committee can mend; a split is a disagreement for the dispute game.
  Cause cause = Cause::kNoCommittee;
  // Once final: the challenge's outcome record (docs/PROTOCOL.md 20.1) and
  // its index in the ledger's outcome log.
  Outcome outcome;
  uint64_t outcome_index = 0;
  // finalize_challenge only: the attempt ended for want of participation
  // and attempts remain, so the challenge is not final: it awaits a new
  // committee (redraw_committee), its outcome record logged all the same.
  bool rerun = false;
};

// A committee member of a challenge, and what it did.
struct MemberInfo {
  Bytes identity;
  uint64_t stake = 0;
  bool committed = false;
  bool revealed = false;
};

struct VerifierInfo {
  Bytes identity;
  uint64_t stake = 0;
  uint64_t registered_height = 0;
};

struct ChallengeInfo {
  uint64_t id = 0;
  hash::Digest run_id;
  uint64_t step = 0;
  Mode mode = Mode::kBitwise;
  uint64_t issued_height = 0;
  uint64_t opening_deadline = 0;  // last height of the opening phase
  bool opened = false;
  uint64_t opened_height = 0;     // when opened: the phases below start here
  uint64_t commit_deadline = 0;   // when opened: last height of the commit phase
  uint64_t reveal_deadline = 0;   // when opened: last height of the reveal phase
  hash::Digest manifest_digest;  // when opened
  hash::Digest opened_state;     // when opened: the opened leaf's state digest
  double opened_update_norm = 0;  // when opened: the opened leaf's committed update norm
  // Norm-bucket mode, when opened: the bucket of opened_update_norm at the
  // task spec's resolution, the value witnesses' buckets are compared with.
  std::optional<int64_t> committed_bucket;
  std::vector<MemberInfo> committee;  // sorted by identity; empty while awaiting a redraw
  uint64_t committee_stake = 0;
  size_t witness_commits = 0;
  size_t witness_reveals = 0;
  std::optional<ChallengeVerdict> verdict;  // once final
  // Re-runs: the current committee's attempt (1 = the first committee),
  // the height from which the randomness of a new committee is taken while
  // one is awaited, and for attempt > 1 the randomness and height of the
  // redraw (the commit phase starts there). Excluded: members of earlier
  // committees that were silent, misconfigured or unreplayed, never drawn
  // again for this challenge; sorted.
  uint32_t attempt = 1;
  std::optional<uint64_t> awaiting_redraw_from;
  std::optional<BlockRandomness> redrawn_from;
  uint64_t redrawn_height = 0;
  std::vector<Bytes> excluded;
};

// One claim of a miner in a dispute: its committed step leaf of the
// round's point and the leaf's inclusion proof against the run's root.
struct LeafClaim {
  Bytes step_leaf;
  Bytes leaf_proof;
};

// A party's opening of the disputed node as the ledger checked it
// (docs/ledger.md 2.16).
struct OpeningOnLedger {
  hash::Digest digest;           // SHA-256 of the opening's bytes
  dispute::OpeningCheck check;   // rules 1 and 2 (but batch sources), the post-state node
  bool operator==(const OpeningOnLedger &) const = default;
};

// An open dispute (docs/ledger.md 2.12-2.17): the run's miner (party A)
// and a verifier (party B), in one of its phases.
struct DisputeInfo {
  uint64_t id = 0;
  hash::Digest run_id;
  Bytes miner, challenger;
  uint64_t opened_lo = 0, opened_hi = 0, opened_height = 0;
  DisputePhase phase = DisputePhase::kSteps;
  // The step bisection's interval (lo, hi]: S_lo agreed, the parties' S_hi
  // (past the steps phase, hi = lo + 1 is the step found).
  uint64_t lo = 0, hi = 0;
  hash::Digest agreed, miner_hi, challenger_hi;
  uint32_t rounds = 0;            // step rounds played
  // The current round's points (steps, or node counts in the operators
  // phase); empty in the other phases.
  std::vector<uint64_t> points;
  uint64_t deadline = 0;          // the last height of the current round or phase
  uint64_t miner_deadline = 0;    // the miner's: deadline + miner_grace (2^64 - 1 at most)
  // Whether each party has made its call of the current round or phase
  // (claimed, committed its trace, opened its node).
  bool miner_claimed = false, challenger_claimed = false;
  TraceCommitment miner_trace, challenger_trace;  // size 0: not committed
  // The operators phase on: the operator bisection's interval over node
  // counts, its agreed root and the parties' roots at op_hi.
  uint64_t op_lo = 0, op_hi = 0;
  hash::Digest op_agreed, miner_op_hi, challenger_op_hi;
  uint32_t op_rounds = 0;
  std::optional<uint64_t> node;  // the openings phase on: the first differing node (op_hi - 1)
  std::optional<OpeningOnLedger> miner_opening, challenger_opening;
};

// What a dispute call did: the dispute it moved and, when that ended it,
// its record and the record's index in the outcome log.
struct DisputeProgress {
  uint64_t dispute_id = 0;
  std::optional<DisputeRecord> ended;
  uint64_t outcome_index = 0;
};

// Counts of what a ledger's state holds.
struct LedgerSummary {
  uint64_t verifiers = 0;
  uint64_t total_stake = 0;  // the verifiers' stakes
  std::optional<BlockRandomness> latest_randomness;
  uint64_t tasks = 0;
  uint64_t open_runs = 0;
  uint64_t closed_runs = 0;
  uint64_t kept_challenges = 0;  // open, or final with their run still open
  uint64_t open_disputes = 0;
  uint64_t held = 0;    // the free balances and bonds the ledger holds
  uint64_t burned = 0;  // bonds burned (a FAIL's, both parties' of a dispute both lose)
};

class Ledger {
 public:
  // kInvalidArgument for an invalid config.
  explicit Ledger(const LedgerConfig &config);

  const LedgerConfig &config() const { return config_; }
  // The latest `now` an accepted call carried (0 for a new ledger).
  uint64_t height() const { return height_; }

  // Posts a task (canonical pot.v2.Task bytes) from its owner; returns the
  // task id.
  hash::Digest post_task(ByteView caller, ByteView task, uint64_t now);
  // Registers a run of the task its commitment names, under (task id, miner
  // identity), and returns its run id. The commitment must match the task.
  hash::Digest start_training_commitment(ByteView caller, ByteView commitment, uint64_t now);
  // Posts the root of the first `size` step leaves; seals the run at
  // size == declared_steps, with the steps its statistics tables flag
  // (docs/PROTOCOL.md 5.3; ascending, at most the task's challenge rounds),
  // which issue_challenge challenges for certain. Only the sealing post
  // carries flagged steps.
  void post_checkpoint_root(ByteView caller, const hash::Digest &run_id, uint64_t size,
                            const hash::Digest &root, ByteView consistency_proof, uint64_t now,
                            const SealPost &seal = {});
  // The chain's randomness of block `now`, supplied by the embedding runtime
  // (never a user's call): 32 bytes of drand, a VRF output or the like.
  void post_randomness(const hash::Digest &randomness, uint64_t now);
  // Registers the caller as a verifier with a stake of at least min_stake
  // (locked by the runtime). A verifier is drawn into the committees of
  // challenges drawn from randomness posted after its registration.
  void register_verifier(ByteView caller, uint64_t stake, uint64_t now);
  // Bonds (docs/ledger.md 2.18). The runtime credits `amount` it took from
  // the identity's funds to its free balance (never a user's call, like
  // post_randomness); the identity withdraws from its free balance (the
  // runtime pays it out); bonds are locked from it.
  void deposit(ByteView identity, uint64_t amount, uint64_t now);
  void withdraw(ByteView caller, uint64_t amount, uint64_t now);
  // The identity's free balance and bonds (zero for an unknown identity).
  bond::Balance account_info(ByteView identity) const;
  // Draws the task's challenge rounds (distinct steps) of a sealed run from
  // the randomness of its draw height and opens one challenge per step in
  // the task's mode, then, ascending, one for step 1 and one per flagged
  // step, each unless the draw picked it (docs/ledger.md 2.4);
  // returns their ids in round order. Once per run: a later call returns
  // the same ids and changes nothing.
  std::vector<uint64_t> issue_challenge(const hash::Digest &run_id, uint64_t now);
  void submit_opening(ByteView caller, uint64_t challenge_id, const hash::Digest &manifest_digest,
                      ByteView step_leaf, ByteView leaf_proof, uint64_t now);
  void commit_witness(ByteView caller, uint64_t challenge_id, const hash::Digest &commitment,
                      uint64_t now);
  // Reveals the caller's committed statement: the finding, bound to the
  // challenge by the ledger (witness::Statement).
  void reveal_witness_value(ByteView caller, uint64_t challenge_id, const witness::Finding &finding,
                            ByteView salt, uint64_t now);
  // Appends the challenge's outcome record to the outcome log. Finalizing
  // the last open challenge of a run closes the run: its challenges and
  // commitment are pruned, leaving the closed run's key, slashable flag and
  // what a dispute of it needs (final root, size, S_0).
  ChallengeVerdict finalize_challenge(uint64_t challenge_id, uint64_t now);
  // Draws a new committee for a challenge awaiting one, from the first
  // randomness posted at a height >= its awaiting_redraw_from, among the
  // verifiers registered below that height, the miner and the challenge's
  // excluded members left out; its commit phase starts at `now`. Anyone
  // may call it once the value is posted.
  void redraw_committee(uint64_t challenge_id, uint64_t now);
  // Removes a task that has ended (now > its end_height) and has no open
  // sealed run: the task, its closed runs and its void runs (never sealed,
  // and no root is taken after the end) leave the state. Anyone may call
  // it; the task cannot be posted again (post_task refuses an ended task),
  // so its runs cannot be registered twice. Outcome records stay in the log.
  PrunedTask prune_task(const hash::Digest &task_id, uint64_t now);

  // Disputes (docs/ledger.md 2.12-2.17, src/game/ledger_disputes.cpp and
  // ledger_operators.cpp). A registered verifier disputes the state digest
  // a sealed run's (open or closed, until its task is pruned) committed
  // leaf `hi_leaf` gives, claiming `claim` instead, from
  // the agreed leaf `lo_leaf` (both empty: from step 0, the commitment's
  // initial state). Each round both parties claim the digests of the
  // round's points by its deadline: the miner with its committed leaves and
  // their proofs, the verifier with digests. When one step is left, the
  // dispute ends (no referee configured: its record names the step) or
  // goes on to the operator phase: each party commits its trace of the
  // step (commit_trace), the traces are bisected to one node (claim_dispute
  // with digests), each party opens it (open_node), and the ledger rules or
  // its referee does (rule_dispute). A party that misses a deadline loses
  // (settle_dispute).
  DisputeProgress open_dispute(ByteView caller, const hash::Digest &run_id, ByteView lo_leaf, ByteView lo_proof,
                               ByteView hi_leaf, ByteView hi_proof, const hash::Digest &claim, uint64_t now);
  // Steps phase: exactly one of `digests` (the challenger) and `leaves` (the
  // miner) is the caller's, one per point of the current round. Operators
  // phase: both parties claim `digests`, the roots of their traces' first
  // p nodes for each point p.
  DisputeProgress claim_dispute(ByteView caller, uint64_t dispute_id, const std::vector<hash::Digest> &digests,
                                const std::vector<LeafClaim> &leaves, uint64_t now);
  // Traces phase: the caller's trace of the step found has `size` nodes
  // and root `root`; its last node, the post-state node `post_node`
  // (proven by `post_proof`, its inclusion proof), gives the caller's
  // digest of S_step.
  DisputeProgress commit_trace(ByteView caller, uint64_t dispute_id, uint64_t size, const hash::Digest &root,
                               ByteView post_node, ByteView post_proof, uint64_t now);
  // Openings phase: the caller's opening of the node found
  // (docs/PROTOCOL.md 22.3). The ledger checks it (rules 1 and 2 but batch
  // sources); with both opened it rules, or hands the dispute to the
  // referee. `check` (may be null) receives the ledger's check.
  DisputeProgress open_node(ByteView caller, uint64_t dispute_id, ByteView opening, uint64_t now,
                            dispute::OpeningCheck *check = nullptr);
  // Referee phase: the config's referee names the losers (at least one)
  // and the rule it ruled by: "source" (a batch source), "operator" or
  // "step".
  DisputeProgress rule_dispute(ByteView caller, uint64_t dispute_id, bool miner_loses, bool challenger_loses,
                               DisputeRule rule, uint64_t now);
  // Anyone, once the current round's or phase's deadline has passed with
  // a party that did not make its call: ends the dispute with that party
  // (both, when neither did) the loser; in the referee phase, with no
  // loser (referee_default).
  DisputeProgress settle_dispute(uint64_t dispute_id, uint64_t now);
  // kNotFound for a dispute never opened, or ended (its record is in the
  // outcome log).
  DisputeInfo dispute_info(uint64_t dispute_id) const;

  // kNotFound for an unknown task, run or challenge.
  task::Task task_info(const hash::Digest &task_id) const;
  // Whether a committee found the task's program at fault (section 2.18).
  bool task_program_fault(const hash::Digest &task_id) const;
  RunInfo run_info(const hash::Digest &run_id) const;
  ChallengeInfo challenge_info(uint64_t challenge_id) const;
  VerifierInfo verifier_info(ByteView identity) const;
  // The latest posted randomness (nullopt before the first post).
  std::optional<BlockRandomness> latest_randomness() const { return last_randomness_; }
  // The outcome log: one record per finalized challenge, in finalize order.
  uint64_t outcome_count() const { return outcomes_.size(); }
  hash::Digest outcome_root() const { return outcomes_.root(); }
  // What the state holds, counted (the JSON call ledger_info).
  LedgerSummary summary() const;

  // Canonical pot.v2.LedgerState bytes; kLimit past kMaxLedgerStateBytes.
  Bytes save() const;
  // kLimit past kMaxLedgerStateBytes; kMalformed for bytes that are not a
  // canonical encoding of a state the ledger could have reached.
  static Ledger load(ByteView state);

  // One call as JSON (docs/ledger.md, "JSON interface"): {"call": name,
  // ...arguments}. Returns {"ok": true, ...results}; throws pot::Error like
  // the C++ call, or kInvalidArgument for a malformed call object
  // (ledger_json.cpp, a client of the calls above).
  nlohmann::json apply(const nlohmann::json &call);

 private:
  // Saving and loading the state (ledger_state.cpp).
  friend class LedgerStateWriter;
  friend class LedgerStateReader;

  struct TaskRecord {
    Bytes bytes;  // canonical
    task::Task task;
    bool program_fault = false;  // a challenge ended kTaskProgram: its bond burned, no new runs (stored)
  };
  struct Run {
    Bytes commitment_bytes;  // canonical
    commit::TrainingCommitment commitment;
    uint64_t latest_size = 0;
    hash::Digest latest_root;
    uint64_t seal_height = 0;  // meaningful once sealed
    std::optional<BlockRandomness> drawn_from;  // once its challenges are issued
    std::vector<uint64_t> flagged_steps;  // sealed with, ascending (stored)
    std::optional<hash::Digest> final_state;  // one-trajectory task: S_n's digest, from the seal (stored)
    std::vector<uint64_t> challenge_ids;  // derived: issued in round order, consecutive
    bool lost_dispute = false;  // a dispute ended naming the miner a loser (stored)
    bool slashable = false;  // derived: lost_dispute or a challenge finalized FAIL, kept for queries
    bool sealed() const { return latest_size == commitment.declared_steps; }
  };
  struct Reveal {
    witness::Finding finding;
    Bytes salt;
  };
  struct Opening {
    uint64_t height = 0;  // when it landed: the commit phase starts here
    hash::Digest manifest_digest;
    hash::Digest state_digest;  // the opened leaf's
    double update_norm = 0;     // the opened leaf's, committed before any challenge
  };
  struct Final {
    Verdict verdict = Verdict::kInconclusive;
    uint64_t cluster_size = 0;
    uint64_t cluster_stake = 0;
    uint64_t outcome_index = 0;  // in the outcome log
  };
  // What a closed run keeps: the key (task id, miner) that refuses a second
  // run, and whether the miner is slashable.
  struct ClosedRun {
    hash::Digest task_id;
    Bytes miner_identity;
    bool slashable = false;
    // Kept so that a dispute can be opened after the close (a split's
    // members dispute once the challenge is final): the run's final root
    // over declared_steps leaves and the commitment's S_0.
    uint64_t declared_steps = 0;
    hash::Digest root;
    hash::Digest initial_state_digest;
  };
  struct Dispute {
    hash::Digest run_id;
    Bytes miner, challenger;
    uint64_t declared_steps = 0;  // the run's, and its final root: copied at the opening,
    hash::Digest root;            // so the dispute outlives the run's pruning
    uint64_t opened_lo = 0, opened_hi = 0, opened_height = 0;
    uint32_t rounds_before = 0;   // rounds played before `bisection` was built (load)
    dispute::TimedBisection bisection;  // the step bisection (done past the steps phase)
    DisputePhase phase = DisputePhase::kSteps;
    uint64_t phase_start = 0;     // traces, openings, referee: the phase's first height
    TraceCommitment miner_trace, challenger_trace;
    std::optional<dispute::TimedBisection> operators;  // the operators phase on
    uint32_t op_rounds_before = 0;
    std::optional<OpeningOnLedger> miner_opening, challenger_opening;
  };
  struct Verifier {
    uint64_t stake = 0;
    uint64_t registered_height = 0;
  };
  struct Challenge {
    hash::Digest run_id;
    uint64_t step = 0;
    Mode mode = Mode::kBitwise;
    uint64_t issued_height = 0;
    std::map<Bytes, uint64_t> committee;    // identity -> stake when drawn
    std::optional<Opening> opening;
    std::map<Bytes, hash::Digest> commits;  // identity -> commitment
    std::map<Bytes, Reveal> reveals;        // identity -> revealed value
    std::optional<Final> outcome;           // once final
    // Re-runs (LedgerConfig::max_attempts): attempt 1 is the committee of
    // the run's draw; each later one a redraw.
    uint32_t attempt = 1;
    std::optional<uint64_t> awaiting;       // awaiting a redraw from this height on
    std::optional<BlockRandomness> redrawn_from;  // attempt > 1
    uint64_t redrawn_height = 0;            // attempt > 1: the redraw call's height
    std::set<Bytes> excluded;               // never drawn again for this challenge
  };
  using RunKey = std::pair<hash::Digest, Bytes>;  // (task id, miner identity)

  void check_now(uint64_t now) const;
  // Bonds (ledger_bonds.cpp). Whether the run's miner still holds its bond
  // (the first slashing moves it: a FAIL burns it, a lost dispute pays it).
  static bool holds_bond(bool slashable) { return !slashable; }
  // A dispute ends with the record `d`: the challenger's bond and, when
  // the miner loses, the miner's (if `miner_holds` it: the run is not yet
  // slashed) move to whom the record's losers say (both parties
  // reserve()d in the book first).
  void settle_bonds(const DisputeRecord &d, bool miner_holds) noexcept;
  // The last height the miner may answer a dispute round or phase whose
  // deadline is `deadline`: miner_grace blocks later (2^64 - 1 at most).
  uint64_t with_grace(uint64_t deadline) const { return saturating_add(deadline, config_.miner_grace); }
  // kState while the challenge awaits a new committee (section 2.10).
  static void check_not_awaiting(const Challenge &c, uint64_t challenge_id, const char *call);
  // One run or challenge fewer waits since height `from` (it has an entry).
  void stop_waiting(uint64_t from) noexcept;
  // kState once now is past the task's end_height.
  static void check_not_ended(const task::Task &t, const hash::Digest &task_id, uint64_t now, const char *call);
  // A sealed run's draw height (its seal height + draw_delay fits 64 bits:
  // post_checkpoint_root and load check it).
  uint64_t draw_height(const Run &r) const { return r.seal_height + config_.draw_delay; }
  uint64_t opening_deadline(const Challenge &c) const { return c.issued_height + config_.opening_window; }
  // Once opened: the current attempt's commit phase starts at the opening
  // (attempt 1) or at the redraw.
  uint64_t attempt_start(const Challenge &c) const { return c.attempt == 1 ? c.opening->height : c.redrawn_height; }
  uint64_t commit_deadline(const Challenge &c) const { return attempt_start(c) + config_.commit_window; }
  uint64_t reveal_deadline(const Challenge &c) const { return commit_deadline(c) + config_.reveal_window; }
  // The height after which finalize_challenge is accepted.
  uint64_t final_after(const Challenge &c) const {
    return c.opening ? reveal_deadline(c) : opening_deadline(c);
  }
  // The stored randomness a run waiting since draw height `d` is drawn
  // from, or end().
  std::map<uint64_t, hash::Digest>::const_iterator randomness_for(uint64_t d) const {
    return randomness_.lower_bound(d);
  }
  // The committees of rounds 0..rounds-1 of run `r`, drawn from `value` of
  // height `height`: verifiers registered below that height, the miner
  // excluded.
  std::vector<std::vector<Candidate>> committees_for(const Run &r, const hash::Digest &run_id, uint32_t rounds,
                                                     uint64_t height, const hash::Digest &value) const;
  // The seal's rules (docs/ledger.md 2.3, rules 13-17); the run's final
  // state digest when its task is one trajectory and the post seals.
  std::optional<hash::Digest> check_seal(const Run &r, const hash::Digest &run_id, uint64_t size,
                                         const hash::Digest &root, const SealPost &seal) const;
  // The steps a sealed run is challenged on when drawn from `value`: the
  // task's rounds drawn, then each flagged step not among them, ascending.
  std::vector<uint64_t> challenged_steps(const Run &r, const hash::Digest &run_id, const hash::Digest &value) const;
  // The candidates of a draw from the value of `height` for a challenge of
  // run `r`: verifiers registered below that height, the miner and
  // `excluded` left out, sorted by identity.
  std::vector<Candidate> candidates_for(const Run &r, uint64_t height, const std::set<Bytes> &excluded) const;
  // The round a challenge of run `r` was drawn in (its place among the
  // run's challenge ids).
  static uint32_t round_of(const Run &r, uint64_t id);
  // Whether a stored randomness entry is still needed by a waiting run.
  bool needed(std::map<uint64_t, hash::Digest>::const_iterator entry) const;
  Run &run_for(const hash::Digest &run_id, const char *call);
  const task::Task &task_of(const Run &r) const { return tasks_.at(r.commitment.task_id).task; }
  Challenge &challenge_for(uint64_t id, const char *call);
  // kNotFound naming a pruned challenge (final, its run closed) as such.
  const Challenge &challenge_for(uint64_t id, const char *call) const;
  // The statement a finding makes on challenge `id`.
  static witness::Statement statement(uint64_t id, const Challenge &c, const witness::Finding &f) {
    return {c.run_id, c.step, id, c.mode, f};
  }
  // The verdict the challenge's current record yields (reason included;
  // the outcome record filled in but for its index).
  ChallengeVerdict evaluate(uint64_t id, const Challenge &c) const;
  // evaluate() without the outcome record.
  ChallengeVerdict judge(const Challenge &c) const;
  // Why a reveal cannot judge the challenge (its environment, or a failed
  // check of the member's own inputs: spec, program), or nullopt.
  std::optional<std::string> misconfigured(const Challenge &c, const Reveal &r) const;
  // Norm-bucket mode, once opened: the bucket of the opened leaf's norm.
  std::optional<int64_t> committed_bucket(const Challenge &c) const;
  // Dispute helpers (ledger_disputes.cpp).
  Dispute &dispute_for(uint64_t id, const char *call);
  const Dispute &dispute_for(uint64_t id, const char *call) const;
  // The record of a dispute ending now in its phase with `end`, `losers`
  // (kLoserMiner | kLoserChallenger) and `rule`.
  static DisputeRecord record_of(uint64_t id, const Dispute &d, DisputeEnd end, uint8_t losers, DisputeRule rule);
  // The last height of the dispute's current round or phase.
  uint64_t dispute_deadline(const Dispute &d) const;
  // The step bisection is done: the dispute ends (no referee) or enters
  // the traces phase at `now`. Either way `d` is moved or erased.
  DisputeProgress after_steps(uint64_t id, Dispute &&d, uint64_t now);
  // kState unless `d` is in `phase` and `now` is within its deadline (the
  // operator phase's calls, ledger_operators.cpp).
  // The miner's calls get miner_grace more blocks.
  void check_phase(const Dispute &d, uint64_t dispute_id, DisputePhase phase, uint64_t now, const char *call,
                   bool miner = false) const;
  // The height `now + dispute_window`, kOutOfRange past 2^64 - 1.
  uint64_t phase_deadline(uint64_t now, const char *call) const;
  // Appends the record to the outcome log (the caller checked it is not
  // full); a record naming the miner a loser makes its run slashable.
  DisputeProgress log_end(uint64_t id, const DisputeRecord &rec);
  // Outcome log records of ended disputes (derived: next_dispute_id_ less
  // the open disputes).
  uint64_t ended_disputes() const { return next_dispute_id_ - disputes_.size(); }

  LedgerConfig config_;
  uint64_t height_ = 0;
  uint64_t next_challenge_id_ = 0;
  std::map<hash::Digest, TaskRecord> tasks_;
  std::map<hash::Digest, Run> runs_;             // open runs
  std::map<hash::Digest, ClosedRun> closed_;     // closed runs: every challenge final, pruned
  std::map<RunKey, hash::Digest> run_keys_;
  std::map<uint64_t, Challenge> challenges_;
  // Randomness: the latest post, and the posted values some sealed run
  // still waits for (no other value is kept).
  std::optional<BlockRandomness> last_randomness_;
  std::map<uint64_t, hash::Digest> randomness_;  // height -> value
  std::map<uint64_t, uint64_t> waiting_;         // draw height -> sealed runs not yet drawn, challenges awaiting a redraw
  std::map<Bytes, Verifier> verifiers_;          // identity -> registration
  uint64_t total_stake_ = 0;                     // derived: the verifiers' stakes, below 2^64
  merkle::Log outcomes_;                         // the outcome log's right border
  uint64_t next_dispute_id_ = 0;
  std::map<uint64_t, Dispute> disputes_;         // open disputes
  bond::Book book_;                              // free balances and bonds (docs/ledger.md 2.18)
  std::map<Bytes, uint32_t> open_tasks_;         // derived: owner -> tasks held (>= 1)
};

}  // namespace pot::game
