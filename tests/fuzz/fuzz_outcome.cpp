// Outcome records (docs/PROTOCOL.md section 20.1), the leaves of a ledger's
// outcome log that a light client decodes: a decoded record must re-encode
// to the input.
#include <algorithm>
#include <cstdlib>

#include "fuzz_common.h"
#include "game/outcome.h"

POT_FUZZ_TARGET({
  const auto outcome = pot::game::Outcome::decode(input);
  const pot::Bytes again = outcome.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  (void)outcome.to_json().dump();
})
