// Canonical task bytes, and the check of a commitment against the task.
#include <cstdlib>

#include "fuzz_common.h"
#include "task/task.h"

POT_FUZZ_TARGET({
  const auto t = pot::task::Task::decode(input);
  const pot::Bytes again = t.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  pot::commit::TrainingCommitment c;
  c.task_id = t.id();
  c.initial_state_digest = t.initial_state_digest;
  c.schedule_root = t.schedule_root;
  c.dataset_root = t.dataset_root;
  c.dataset_size = t.dataset_size;
  c.spec_digest = t.spec.digest();
  c.declared_steps = t.min_steps;
  c.miner_identity = {'m'};
  pot::task::check_commitment(t, c);  // a commitment built from the task is admitted
  c.declared_steps = t.max_steps + (t.max_steps == UINT64_MAX ? 0 : 1);
  if (t.max_steps != UINT64_MAX) {
    bool refused = false;
    try {
      pot::task::check_commitment(t, c);
    } catch (const pot::Error &) {
      refused = true;
    }
    if (!refused) std::abort();
  }
})
