// Chunk-range hashes for sharded states (docs/PROTOCOL.md section 5): a rank
// that holds bytes [offset, offset + length) of a tensor hashes them into the
// maximal aligned subtrees of the tensor's chunk tree and sends only those
// 32-byte hashes; an assembler joins the ranges into the tensor digest.
#pragma once

#include <map>
#include <vector>

#include "hash/tensor.h"

namespace pot::hash {

struct ChunkRange {
  uint64_t total_bytes = 0;  // length of the whole tensor
  uint64_t offset = 0;       // multiple of kChunkSize
  uint64_t length = 0;       // multiple of kChunkSize unless the range ends the tensor
  std::vector<Subtree> subtrees;

  Bytes encode() const;
  // Strict decoder: rejects anything encode() would not produce (kMalformed).
  static ChunkRange decode(ByteView b);
};

// Hashes data as bytes [offset, offset + data.size()) of a tensor of
// total_bytes bytes. kInvalidArgument when the range is not chunk-aligned or
// leaves the tensor.
ChunkRange hash_range(ByteView data, uint64_t offset, uint64_t total_bytes, unsigned threads);

class TensorAssembler {
 public:
  explicit TensorAssembler(TensorMeta meta);
  // kInvalidArgument when the range belongs to a tensor of another length or
  // overlaps a range already added.
  void add(const ChunkRange &range);
  // kInvalidArgument while ranges are missing.
  Digest finish() const;

 private:
  TensorMeta meta_;
  uint64_t nbytes_;
  std::map<uint64_t, ChunkRange> ranges_;  // by offset
};

}  // namespace pot::hash
