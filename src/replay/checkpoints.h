// The trainer-side recorder and the checkpoint store it writes
// (docs/PROTOCOL.md section 21.4). A checkpoint directory holds:
//
//   pot-run.json                 format, spec (canonical hex), checkpoint interval
//   program.pt                   the model program (digest = the spec's)
//   commitment.bin, schedule.bin the training commitment and every schedule entry
//   log.tree                     the step log (stored tree file, section 7.2)
//   steps.jsonl                  one line per step: digest, loss and update norm bits
//   checkpoints/%012d.safetensors S_0 and every k-th state
//   derived/%012d.safetensors    states re-derived for openings (a cache)
//
// The miner stores every k-th state; the state an opening needs is re-derived
// from the nearest checkpoint before it by replaying the steps in between,
// each replayed digest checked against the log.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commit/commitment.h"
#include "commit/dataset.h"
#include "spec/spec.h"
#include "commit/step_leaf.h"
#include "hash/safetensors.h"
#include "merkle/stored_tree.h"
#include "statecheck/state_flags.h"

namespace pot::replay {

struct StepRecord {
  uint64_t step = 0;
  hash::Digest state_digest;
  double loss = 0;
  double update_norm = 0;  // from S_{step-1} to S_step, committed by the leaf
  hash::Digest stats_digest;  // of S_step's statistics table (stats/<step>.stats), committed by the leaf

  // The step leaf of run `run_id` that this record commits (PROTOCOL 10).
  commit::StepLeaf leaf(const hash::Digest &run_id) const {
    return {run_id, step, state_digest, loss, update_norm, stats_digest};
  }
};

class Recorder {
 public:
  // Creates the directory (or uses an empty one); kConflict when it already
  // holds a run. The program is copied in after its digest is checked
  // against the spec (kProofMismatch). checkpoint_every >= 1.
  static std::unique_ptr<Recorder> create(const std::string &dir, const spec::ExecutionSpec &spec,
                                          const std::string &program_path, uint64_t checkpoint_every,
                                          unsigned hash_threads = 0);
  // Reopens the directory of a recorder whose process stopped (killed at
  // any point, crashed, or closed before its last step) to continue the
  // run. The run continues after the last stored checkpoint c that the log
  // and steps.jsonl both hold whole and that digests to the state they
  // record: the log is cut back to c leaves, steps.jsonl to c lines (a torn
  // last line or append is dropped), later checkpoints and derived states
  // are removed, and the recorder is where it was after end_step(c) (or
  // set_commitment, for c = 0): the caller loads S_c (resumed_state_path)
  // into its model and optimizer and trains step c + 1 on. Training is
  // deterministic, so the resumed run's leaves are the uninterrupted run's.
  // kState for a directory without a commitment (no step ever began: start
  // again in an empty directory), kNotFound without pot-run.json,
  // kMalformed (naming the file) for anything a crash cannot leave: a
  // record that contradicts the log, a malformed whole line, a program or
  // schedule that is not the commitment's.
  static std::unique_ptr<Recorder> resume(const std::string &dir, unsigned hash_threads = 0);
  ~Recorder();

  // After resume: the step the run continues after, and the file of its
  // state (the checkpoint S_c).
  uint64_t resumed_step() const;
  std::string resumed_state_path() const;

  // Records S_0 (checkpoint 0) and returns its digest: the commitment's
  // initial_state_digest. Once, before everything else (kState). S_0's
  // hparam/lr must be the spec's rate of step 1 (kInvalidArgument).
  hash::Digest start(const std::vector<hash::StTensor> &s0);
  // The training commitment and the full schedule it commits to (entries of
  // steps 1..declared_steps in order). Checks the spec digest, S_0's digest
  // and the schedule root (kProofMismatch). Before step 1 (kState).
  void set_commitment(const commit::TrainingCommitment &c, const std::vector<Bytes> &schedule);

  // Starts step t (= last recorded + 1, kState otherwise; after
  // set_commitment, kState otherwise: the leaf names the run) and applies the
  // seed policy to LibTorch's default CPU generator: per_step seeds it with
  // seed(base, t) (returned); single_seed restores the generator state of
  // S_{t-1}'s rng/cpu tensor (returns 0); none returns 0.
  uint64_t begin_step(uint64_t t);
  // Ends the step begun: digests S_t (whose hparam/lr must be the spec's
  // rate of step t+1, bit for bit: kInvalidArgument naming both values),
  // computes the update norm from S_{t-1}'s parameters (kept as a copy) to
  // S_t's, appends the step leaf to the log, and writes a checkpoint when t
  // is a multiple of the interval or the last declared step.
  commit::StepLeaf end_step(const std::vector<hash::StTensor> &state, double loss);

  uint64_t size() const;
  hash::Digest root(uint64_t size) const;
  std::vector<hash::Digest> consistency_proof(uint64_t size1, uint64_t size2) const;
  // Flushes the log; with a commitment, requires all declared steps (kState).
  hash::Digest finish();

 private:
  Recorder() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CheckpointStore {
 public:
  // Opens a recorder's directory (kNotFound / kMalformed).
  static std::unique_ptr<CheckpointStore> open(const std::string &dir);
  ~CheckpointStore();

  uint64_t size() const;
  uint64_t checkpoint_every() const;
  const spec::ExecutionSpec &spec() const;
  const StepRecord &step(uint64_t t) const;  // 1..size()

  // Path of a file holding S_t (0 <= t <= size()): the checkpoint when there
  // is one, else S_t re-derived from the nearest checkpoint before t by
  // replaying steps with the samples of dataset_dir: a directory of
  // samples (one safetensors file per sample, named %06d.safetensors by
  // dataset index), or a token stream (a stream file, or a directory
  // holding stream.json: data/stream_json.h). Every replayed
  // state's digest must equal the log's (kProofMismatch otherwise: the
  // checkpoints or the data do not reproduce the run). `replayed`, when not
  // null, receives the number of steps replayed.
  std::string state_path(uint64_t t, const std::string &dataset_dir, uint64_t *replayed = nullptr);

  // The opening of step t against the log's first log_size leaves
  // (t <= log_size <= size()), pre_state_ref naming S_{t-1} (re-derived as
  // needed); with serve_post, post_state_ref names S_t too (the
  // cross-architecture path), which may cost another re-derivation. A
  // stream dataset's samples are opened as window proofs (PROTOCOL.md 18).
  Bytes opening(uint64_t t, uint64_t log_size, const std::string &dataset_dir, bool serve_post);

  // The committed step leaf of step t and its inclusion proof in the log's
  // first log_size leaves (t <= log_size <= size(), kOutOfRange otherwise;
  // kState without a commitment): a miner's claim in a ledger dispute
  // (docs/ledger.md 2.12, 2.13). Reads no state, replays nothing.
  std::pair<Bytes, Bytes> leaf(uint64_t t, uint64_t log_size) const;

  // The flagged steps of the log's first log_size leaves (PROTOCOL.md 5.3),
  // from the tables kept in stats/ (each checked against steps.jsonl,
  // kMalformed otherwise): what the miner seals with (docs/ledger.md 2.3).
  std::vector<statecheck::FlaggedStep> run_flags(uint64_t log_size) const;

 private:
  CheckpointStore() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pot::replay
