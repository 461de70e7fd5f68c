// Step leaves of the checkpoint log (docs/PROTOCOL.md section 10): after
// step t the trainer appends (run, t, digest of S_t, digest of S_t's
// statistics table, loss of step t, norm of the step's parameter update).
// The leaf data has a fixed size and its own domain tag; the log hashes it as
// an RFC 6962 leaf. Leaf index t - 1 holds step t.
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
  // The digest of S_t's statistics table (section 5.2): bound here so that
  // the flags of every step (5.3) are the miner's commitment, checked by
  // every verifier that reads S_{t-1} or S_t (check 31). Last in the struct,
  // after the loss and norm in the bytes.
  hash::Digest stats_digest;

  static constexpr size_t kSize = 1 + 11 + 32 + 8 + 32 + 32 + 8 + 8;  // 132 bytes

  Bytes encode() const;
  // Strict: exactly kSize bytes, the version-3 tag (a version-1 or -2 leaf
  // is refused naming its version), step >= 1 (kMalformed).
  static StepLeaf decode(ByteView b);
  hash::Digest leaf_hash() const;
};

}  // namespace pot::commit
