// Saved ledger state bytes: load must refuse any state the calls could not
// have reached, and save(load(b)) == b.
#include <cstdlib>

#include "fuzz_common.h"
#include "game/ledger.h"

POT_FUZZ_TARGET({
  const auto l = pot::game::Ledger::load(input);
  const pot::Bytes again = l.save();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
})
