// Schedule entry bytes (docs/PROTOCOL.md section 16.1).
#include <cstdlib>

#include "commit/dataset.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto e = pot::commit::ScheduleEntry::decode(input);
  const pot::Bytes again = e.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
})
