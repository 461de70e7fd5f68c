// Helpers for tests of the C API (pot.h only).
#pragma once

#include "pot.h"

namespace pot::test {

// The digest of a state's statistics table (docs/PROTOCOL.md 5.2), as a
// step leaf commits it; a zero digest when a call fails (the test's own
// assertions then fail on the leaf).
inline pot_digest stats_digest_of(const pot_safetensors *file) {
  pot_digest d{};
  pot_bytes table{};
  if (pot_safetensors_stats(&table, file, 1, nullptr) == POT_OK)
    (void)pot_state_stats_digest(&d, table.data, table.len, nullptr);
  pot_bytes_free(&table);
  return d;
}

}  // namespace pot::test
