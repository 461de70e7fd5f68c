// The task a run answers to (docs/PROTOCOL.md section 17.1). A task owner
// fixes, before anyone trains, everything a miner must not choose: the model
// program and the execution spec (the spec carries the program digest), the
// dataset, where S_0 comes from, the schedule, bounds on the number of steps
// and how finished runs are challenged. The task id is the digest of its
// canonical encoding; a training commitment names it, and check_commitment
// says whether the commitment is one the task admits.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "commit/commitment.h"
#include "spec/spec.h"
#include "hash/sha256.h"

namespace pot::task {

inline constexpr size_t kMaxTaskBytes = 73728;  // a spec of up to 64 KiB and the rest
inline constexpr size_t kMaxOwnerBytes = 256;
inline constexpr uint32_t kMaxChallengeRounds = 65536;
// The largest committee a task may ask for (it bounds a challenge's witness
// commitments and the work of finalizing it).
inline constexpr uint32_t kMaxCommitteeSize = 1024;

enum class ChallengeMode { kBitwise = 1, kNormBucket = 2 };

// The schedule rule (docs/PROTOCOL.md 17.1, field 7): one listed schedule
// for every run, or each run's own seeded schedule (17.3).
// run_seeded_uniform draws each run's indices with replacement (16.3).
enum class ScheduleRule { kListed = 1, kRunSeeded = 2, kRunSeededUniform = 3 };

// A run-seeded task's ledger recomputes each registered run's schedule root
// (17.3): at most this many index draws, max_steps * batch_size plus one
// epoch's permutation of the dataset (run_seeded_uniform: no permutation).
inline constexpr uint64_t kMaxRunSeededDraws = uint64_t{1} << 24;  // ~5 s (bench_run_schedule)

// "bitwise" or "norm_bucket".
const char *challenge_mode_name(ChallengeMode m) noexcept;

struct Task {
  uint32_t protocol_version = commit::kProtocolVersion;
  Bytes owner;                        // who posts the task, 1..256 bytes
  spec::ExecutionSpec spec;         // carries the model program digest
  hash::Digest dataset_root;          // section 15
  uint64_t dataset_size = 0;
  hash::Digest initial_state_digest;  // S_0 rule: the published S_0 every run starts from
  ScheduleRule schedule_rule = ScheduleRule::kListed;
  hash::Digest schedule_root;         // kListed: the listed schedule every run follows (else unused, zero)
  uint64_t min_steps = 0;             // bounds on declared_steps
  uint64_t max_steps = 0;
  uint32_t challenge_rounds = 0;      // challenge policy: distinct steps challenged per run
  ChallengeMode challenge_mode = ChallengeMode::kBitwise;
  uint32_t committee_size = 0;        // verifiers drawn to judge each challenge, 1..kMaxCommitteeSize
  // The last block height at which a ledger registers runs of the task and
  // takes their checkpoint roots (>= 1): a run not sealed by then is void,
  // and once none of its runs is open the task can be pruned
  // (docs/ledger.md section 2.11).
  uint64_t end_height = 0;

  // Throws naming the first rule broken: kUnsupported for another protocol
  // version, kInvalidArgument otherwise (docs/PROTOCOL.md section 17.1).
  void validate() const;
  // Every run of the task is one trajectory: a listed schedule (the same
  // samples in the same order from the same S_0) whose steps draw no
  // per-run randomness (not per_step with dropout or other_rng_use). The
  // ledger pays such a trajectory once (docs/ledger.md 2.3) and opens no
  // run's states before the task's end (2.4), so no identity can copy one.
  bool one_trajectory() const {
    return schedule_rule == ScheduleRule::kListed &&
           !(spec.seed_policy == spec::SeedPolicyKind::kPerStep && spec.declares_rng());
  }
  // Canonical pot.v2.Task bytes. Validates first.
  Bytes encode() const;
  // Strict decoding: kLimit past kMaxTaskBytes, kUnsupported for another
  // protocol version (checked before any other field), kMalformed for bytes
  // that are not the canonical encoding of a valid task.
  static Task decode(ByteView b);
  // The task id: tagged("pot/v2/task", encode()).
  hash::Digest id() const;

  // JSON form (docs/cli.md "Task"): unknown or missing keys are errors
  // (kInvalidArgument); the spec is given as its JSON object.
  static Task from_json(const nlohmann::json &j);
  nlohmann::json to_json() const;
};

// The seed of a run's schedule under a run-seeded task (docs/PROTOCOL.md
// 17.3): u64le of the first 8 bytes of tagged("pot/v2/run-schedule",
// task_id || u32le(len(miner)) || miner || u64le(declared_steps)).
uint64_t run_schedule_seed(const hash::Digest &task_id, ByteView miner, uint64_t declared_steps);

// kOutOfRange unless min_steps <= declared_steps <= max_steps; `id` is
// task.id(), which callers have at hand (it digests the whole task).
void check_steps(const Task &task, const hash::Digest &id, uint64_t declared_steps);

// The schedule root a run of `miner` for `declared_steps` steps must commit
// to: the listed root, or the root of the run's seeded schedule (up to
// kMaxRunSeededDraws draws). `id` is task.id(); the caller has checked the
// step count (check_steps).
hash::Digest schedule_root_for(const Task &task, const hash::Digest &id, ByteView miner, uint64_t declared_steps);

// The commitment of `miner` for `declared_steps` steps of the task: every
// other field is the task's (a version-2 task fixes them all). kOutOfRange
// for a step count outside the task's bounds.
commit::TrainingCommitment commitment_for(const Task &task, ByteView miner, uint64_t declared_steps);

// Throws unless `commitment` is a run the task admits: kOutOfRange for
// declared_steps outside [min_steps, max_steps] (checked first: a
// run-seeded schedule root depends on it), then kInvalidArgument naming the
// first field that differs from what the task fixes (task_id,
// initial_state_digest, schedule_root, dataset_root, dataset_size,
// spec_digest, in that order).
// With recompute_run_schedule false, a run-seeded task's schedule root is
// not recomputed (the ledger's load: it was recomputed at registration, and
// redoing it for every saved run could cost 2^24 draws each).
void check_commitment(const Task &task, const commit::TrainingCommitment &commitment,
                      bool recompute_run_schedule = true);

}  // namespace pot::task
