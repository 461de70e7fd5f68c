// State statistics tables (docs/PROTOCOL.md 5.2-5.3): a decoded table must
// re-encode to the input, render as JSON, and flag nothing against itself
// (every rule compares a change, or names the step a property starts).
#include <algorithm>
#include <cstdlib>

#include "fuzz_common.h"
#include "statecheck/state_flags.h"

POT_FUZZ_TARGET({
  const auto table = pot::statecheck::StateStats::decode(input);
  const pot::Bytes again = table.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  (void)table.to_json();
  if (!pot::statecheck::state_flags(table, table).empty()) std::abort();
})
