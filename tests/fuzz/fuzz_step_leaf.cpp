// Step leaf bytes (docs/PROTOCOL.md section 10): a decoded leaf must
// re-encode to the input.
#include <algorithm>
#include <cstdlib>

#include "commit/step_leaf.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto leaf = pot::commit::StepLeaf::decode(input);
  const pot::Bytes again = leaf.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
})
