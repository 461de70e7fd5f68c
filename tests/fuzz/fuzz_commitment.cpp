// Canonical training commitment bytes.
#include <cstdlib>

#include "commit/commitment.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto c = pot::commit::TrainingCommitment::decode(input);
  const pot::Bytes again = c.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  (void)c.run_id();
})
