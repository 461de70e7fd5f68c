// Step leaves of the checkpoint log (docs/PROTOCOL.md section 10): after
// step t the trainer appends (run, t, digest of S_t, loss of step t, norm of
// the step's parameter update). The leaf data has a fixed size and its own
// domain tag; the log hashes it as an RFC 6962 leaf. Leaf index t - 1 holds
// step t.
#pragma once

#include <cstdint>

#include "hash/sha256.h"

namespace pot::commit {

struct StepLeaf {
  hash::Digest run_id;  // the run the step belongs to (section 17.2)
  uint64_t step = 0;    // 1-based
  hash::Digest state_digest;
  double loss = 0;         // stored as its IEEE-754 binary64 bits
  double update_norm = 0;  // section 13 over "param/" from S_{t-1} to S_t, binary64 bits

  static constexpr size_t kSize = 1 + 11 + 32 + 8 + 32 + 8 + 8;  // 100 bytes

  Bytes encode() const;
  // Strict: exactly kSize bytes, the version-2 tag (a version-1 leaf is
  // refused naming its version), step >= 1 (kMalformed).
  static StepLeaf decode(ByteView b);
  hash::Digest leaf_hash() const;
};

}  // namespace pot::commit
