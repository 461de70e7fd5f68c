// Canonical task bytes, and the check of a commitment against the task.
#include <cstdlib>

#include "fuzz_common.h"
#include "task/task.h"

POT_FUZZ_TARGET({
  const auto t = pot::task::Task::decode(input);
  const pot::Bytes again = t.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  const pot::Bytes miner = {'m'};
  pot::commit::TrainingCommitment c = pot::task::commitment_for(t, miner, t.min_steps);
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
