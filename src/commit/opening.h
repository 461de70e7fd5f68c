// Openings of challenged steps and their verification (docs/PROTOCOL.md
// section 18). verify_opening checks everything but the replay itself, in a
// fixed order, and names the first check that fails; the replay layer plugs
// the step execution in after it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "commit/commitment.h"
#include "common/status.h"

namespace pot::commit {

inline constexpr size_t kMaxManifestBytes = size_t{256} << 20;
inline constexpr size_t kMaxRefBytes = 4096;

// A sample of a sample dataset carries payload and proof; a window of a
// token-stream dataset (PROTOCOL.md 15.1) carries only its window proof, and
// the verifier rebuilds the payload from it.
struct SampleOpening {
  uint64_t index = 0;
  Bytes payload;  // safetensors bytes
  Bytes proof;    // concatenated 32-byte hashes
  Bytes window;   // stream datasets: the window proof record
};

struct OpeningManifest {
  hash::Digest run_id;
  uint64_t step = 0;
  uint64_t log_size = 0;
  hash::Digest pre_state_digest;
  Bytes pre_leaf, pre_leaf_proof;  // pre_leaf empty when step == 1
  Bytes post_leaf, post_leaf_proof;
  Bytes schedule_entry, schedule_proof;
  std::vector<SampleOpening> samples;
  std::string pre_state_ref, post_state_ref;
  Bytes stream;  // stream datasets: the descriptor (PROTOCOL.md 15.1); empty otherwise
  // The run record (PROTOCOL.md 18, check 32): every leaf of the log, the
  // statistics table of every state they commit, the steps the tables flag.
  Bytes run_leaves;               // log_size leaves of StepLeaf::kSize bytes, in step order
  std::vector<Bytes> run_tables;  // tables of S_1 .. S_{log_size}
  std::vector<uint64_t> flagged_steps;  // ascending

  Bytes encode() const;
  // Canonical decoding, bounded (kLimit past kMaxManifestBytes), kMalformed
  // for anything that is not exactly the canonical encoding.
  static OpeningManifest decode(ByteView b);
  // tagged("pot/v3/opening", encode()) (version 3 since pot 0.3.0: the
  // run record).
  hash::Digest digest() const;
};

// The checks, in the order verify_opening runs them. The numbers are the
// pot_opening_check values of pot.h.
enum class OpeningCheck {
  kOk = 0,
  kManifest = 1,            // bytes are not a canonical manifest
  kRunId = 2,               // manifest is for another run
  kStep = 3,                // not the challenged step, outside 1..declared steps, or beyond the log
  kLogSize = 4,             // proofs made for another log size than posted
  kPostLeaf = 5,            // leaf t malformed, another run or another step
  kPostLeafProof = 6,       // leaf t not in the posted log
  kPreStateCommitted = 7,   // t = 1: pre-state is not the committed initial state
  kPreLeaf = 8,             // leaf t-1 malformed, another run, another step, or another digest
  kPreLeafProof = 9,        // leaf t-1 not in the posted log
  kScheduleEntry = 10,      // entry malformed or for another step
  kScheduleProof = 11,      // entry not in the committed schedule
  kSampleCount = 12,        // not one sample per scheduled index
  kSampleIndex = 13,        // a sample's index differs from the schedule's
  kSamplePayload = 14,      // a payload is not a valid sample
  kSampleProof = 15,        // a sample is not in the committed dataset
  kPreStateDigest = 16,     // served pre-state file digests to another value
  kPostStateDigest = 17,    // served post-state file digests to another value
  // The replay (pot_verify_step, section 21.5), after the checks above.
  kSpec = 18,               // the spec is not the committed one
  kProgram = 19,            // the model program is not the spec's
  kReplay = 20,             // the step could not be replayed (state/batch/program mismatch, NaN loss)
  kReplayedState = 21,      // bitwise: the replayed S_t is not leaf t's state
  kReplayedLoss = 22,       // the replayed loss is not leaf t's (bitwise: bit for bit; norm bucket: within a tolerance)
  kReplayedBucket = 23,     // norm bucket: the replayed update's bucket does not match the served one
  // After check 17: a NaN or infinity in leaf t's loss or a served state;
  // in pot_verify_step also in a gradient, the replayed loss or S_t.
  kNonFinite = 24,
  // pot_verify_step: hparam/lr of the served S_{t-1} (or, cross-architecture,
  // of S_t) is not the rate the spec's schedule gives step t (t+1).
  kLearningRate = 25,
  // After check 28 when S_t is served, else after check 22 in pot_verify_step:
  // leaf t's update norm is not the norm from S_{t-1} to the served (or, in
  // the bitwise path, the replayed) S_t, bit for bit.
  kCommittedNorm = 26,
  // pot_verify_step, after 26 (bitwise) or 23 (norm bucket): the replayed
  // S_t does not depend on the step's gradient (witness::gradient_ignored).
  kGradientIgnored = 27,
  // After check 24: a served state holds more subnormal values than the
  // bounds of hash::subnormal_excess allow (a state honest training does
  // not reach, whose replay would be many times slower than a step).
  kSubnormal = 28,
  // pot_verify_step, norm-bucket path, after 22: the served S_t's update is
  // not the replayed one within the tolerances of witness/tolerance.h (as a
  // whole, or one tensor's).
  kReplayedUpdate = 29,
  // pot_verify_step, last: the task's program, not the miner's work, makes
  // the step what it is (its result depends on the thread count, or its
  // declared randomness changes nothing). The task's fault: the ledger
  // never counts it against the miner.
  kTaskProgram = 30,
  // A state's statistics table (PROTOCOL 5.2) is not the one its leaf
  // commits: the served S_{t-1} against leaf t-1, the served S_t against
  // leaf t (pot_opening_verify), the replayed S_t against leaf t
  // (pot_verify_step). The flags of every step are the miner's commitment.
  kStateStats = 31,
  // After check 9: the run record (every leaf, every state's statistics
  // table, the flagged steps) is not the posted log's, or lists other
  // flagged steps than its tables give, or than the run sealed with on the
  // ledger. A flagged step is challenged for certain (docs/ledger.md 2.3).
  kRunFlags = 32,
};
inline constexpr OpeningCheck kLastOpeningCheck = OpeningCheck::kRunFlags;

const char *opening_check_name(OpeningCheck c) noexcept;

struct OpeningResult {
  OpeningCheck check = OpeningCheck::kOk;
  Status status = Status::kOk;  // the error behind a failed check
  std::string message;
  // Decoded (valid when check != kManifest). For a stream dataset, once
  // check 15 passed, each sample's payload holds the sample rebuilt from its
  // proven window (what the replay trains on).
  OpeningManifest manifest;
  std::vector<uint64_t> batch;  // the scheduled dataset indices, in order
  std::vector<hash::Digest> sample_digests;
  hash::Digest post_state_digest;  // from leaf t
  hash::Digest post_stats_digest;  // from leaf t: S_t's statistics table (PROTOCOL 5.2)
  double committed_loss = 0;         // from leaf t
  double committed_update_norm = 0;  // from leaf t
};

// Verifies an opening of the challenged step against the run's commitment
// and the posted log root (log_size leaves). The step is an input: a valid
// opening of another step must not answer the challenge. pre_state_path / post_state_path, when given, are the
// served state files, digested in a stream (mmap) and compared. Never throws
// for a bad opening: the result names the first failed check. Throws only for
// misuse (kInvalidArgument) and I/O on the state files is reported as the
// corresponding check with status kIo.
// sealed_flags, when given, are the flagged steps the run sealed with on the
// ledger (docs/ledger.md 2.3): the manifest must list the same (check 32).
OpeningResult verify_opening(const TrainingCommitment &commitment, uint64_t challenged_step, uint64_t log_size,
                             const hash::Digest &log_root,
                             ByteView manifest, const std::optional<std::string> &pre_state_path,
                             const std::optional<std::string> &post_state_path, unsigned threads = 0,
                             const std::optional<std::vector<uint64_t>> &sealed_flags = std::nullopt);

// The flagged steps of a run record's tables (each decoded strictly), as
// check 32 computes them.
std::vector<uint64_t> flagged_steps(const std::vector<Bytes> &tables);

// The bytes the run record of `steps` steps adds to every opening's
// manifest (fields 16 and 17 as encoded, section 18) when each state's
// statistics table is `table_bytes` long. Past kMaxManifestBytes no opening
// of the run can be encoded.
uint64_t run_record_bytes(uint64_t steps, uint64_t table_bytes);
// The most steps whose run record fits kMaxManifestBytes for tables of
// `table_bytes` bytes.
uint64_t max_recorded_steps(uint64_t table_bytes);

}  // namespace pot::commit
