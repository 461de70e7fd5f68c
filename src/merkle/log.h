// The trainer-side checkpoint log: an append-only RFC 6962 tree kept as its
// right border (at most 64 hashes), so appending needs O(log n) memory and
// the root is available at any size. Its state serialises to bytes
// (docs/PROTOCOL.md, "Log state") so a trainer can resume after a restart.
#pragma once

#include "hash/rfc6962.h"

namespace pot::merkle {

using hash::Digest;

class Log {
 public:
  Log() = default;

  // Appends a leaf: its hash is SHA-256(0x00 || data).
  void append(ByteView leaf_data) { append_hash(hash::leaf_hash(leaf_data)); }
  // Appends a leaf whose hash was computed by the caller. kOutOfRange when
  // the log already holds 2^64 - 1 leaves.
  void append_hash(const Digest &leaf_hash);

  uint64_t size() const { return acc_.end(); }
  Digest root() const { return acc_.root(); }

  // u64le size || the border hashes, largest subtree first.
  Bytes save() const;
  // Strict inverse of save(): kMalformed unless the length is exactly
  // 8 + 32 * popcount(size).
  static Log load(ByteView b);

 private:
  hash::Accumulator acc_;
};

}  // namespace pot::merkle
