// A valid spec and task for tests of the core that need one (ledger,
// commitments, openings). The digests stand for a program, dataset, S_0 and
// schedule the tests never build.
#pragma once

#include <string>

#include "commit/commitment.h"
#include "spec/spec.h"
#include "hash/sha256.h"
#include "task/task.h"
#include "witness/statement.h"

namespace pot::test {

inline hash::Digest label_digest(const std::string &s) { return hash::sha256(s.data(), s.size()); }

inline spec::ExecutionSpec test_spec() {
  return spec::ExecutionSpec::from_json(nlohmann::json::parse(R"({
    "framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0.1,
    "optimizer": {"kind": "sgd", "lr": 0.01},
    "grad_clip_max_norm": 0, "grad_accum_microbatches": 1, "batch_size": 4,
    "deterministic_algorithms": true, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
    "seed_policy": {"kind": "per_step", "base_seed": 7}, "norm_bucket_resolution": 16
  })"));
}

// An environment that can judge test_spec()'s steps bitwise (the release,
// threads and hardware class it names).
inline witness::Environment spec_environment() { return {"1.13.0", 1, "cpu-x86_64/aten:avx2/onednn:avx2"}; }

// A finding of kind replayed, in spec_environment().
inline witness::Finding replayed_finding(const hash::Digest &state, int64_t bucket = 0) {
  witness::Finding f;
  f.environment = spec_environment();
  f.replayed_state = state;
  f.bucket = bucket;
  return f;
}

// A task of `steps` steps whose digests derive from `label`.
inline task::Task test_task(const std::string &label = "task", uint64_t steps = 8,
                            task::ChallengeMode mode = task::ChallengeMode::kBitwise, uint32_t rounds = 1,
                            const std::string &owner = "owner", uint32_t committee_size = 8,
                            uint64_t end_height = UINT64_MAX) {
  task::Task t;
  t.owner = Bytes(owner.begin(), owner.end());
  t.spec = test_spec();
  t.dataset_root = label_digest(label + " dataset");
  t.dataset_size = 1000;
  t.initial_state_digest = label_digest(label + " S_0");
  t.schedule_root = label_digest(label + " schedule");
  t.min_steps = t.max_steps = steps;
  t.challenge_rounds = rounds;
  t.challenge_mode = mode;
  t.committee_size = committee_size;
  t.end_height = end_height;
  return t;
}

// The commitment of `miner` that matches `task`.
inline commit::TrainingCommitment commitment_for(const task::Task &task, const Bytes &miner) {
  return task::commitment_for(task, miner, task.min_steps);
}

}  // namespace pot::test
