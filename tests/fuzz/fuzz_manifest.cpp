// Opening manifest bytes, decoded and verified against a fixed commitment.
#include <cstdlib>

#include "commit/opening.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto m = pot::commit::OpeningManifest::decode(input);
  const pot::Bytes again = m.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  pot::commit::TrainingCommitment c;
  c.initial_state_digest.bytes.fill(1);
  c.schedule_root.bytes.fill(2);
  c.task_id.bytes.fill(6);
  c.dataset_root.bytes.fill(3);
  c.dataset_size = 64;
  c.spec_digest.bytes.fill(4);
  c.declared_steps = 16;
  c.miner_identity = {'m'};
  pot::hash::Digest root;
  root.bytes.fill(5);
  (void)pot::commit::verify_opening(c, m.step, m.log_size, root, input, std::nullopt, std::nullopt, 1);
})
