// Canonical tensor digests (docs/PROTOCOL.md section 3): a tensor's bytes are
// cut into kChunkSize chunks hashed under an RFC 6962 tree (so chunks hash in
// parallel and a rank of a sharded run can hash just its byte range), and the
// chunk root is bound with the name, dtype and shape under a domain tag.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hash/dtype.h"
#include "hash/rfc6962.h"

namespace pot::hash {

inline constexpr uint32_t kChunkSize = 65536;   // bytes per chunk leaf
inline constexpr size_t kMaxNameBytes = 1024;   // tensor name length bound
inline constexpr size_t kMaxDims = 32;          // rank bound

struct TensorMeta {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
};

// Validates name (1..kMaxNameBytes bytes of UTF-8 without NUL), dtype and
// shape (at most kMaxDims dims) and returns the byte length the shape implies.
// Throws kInvalidArgument, or kLimit when a bound or 64-bit arithmetic is
// exceeded.
uint64_t validate_meta(const TensorMeta &meta);
void validate_name(std::string_view name);

// Number of chunk leaves of a tensor of nbytes bytes.
inline uint64_t chunk_count(uint64_t nbytes) {
  return nbytes / kChunkSize + (nbytes % kChunkSize != 0);
}

// A byte range of one tensor to hash: `bytes` starts at chunk `first_chunk`
// of that tensor. Its chunks are [first_chunk, first_chunk + chunk_count).
struct ChunkJob {
  ByteView bytes;
  uint64_t first_chunk = 0;
};

// Called on the hashing thread right after a chunk is hashed, while its bytes
// are still in cache: the job's index, the chunk's index within the job (0
// for its first), the chunk's bytes. Calls run concurrently, in no order.
using ChunkVisitor = std::function<void(size_t job, uint64_t chunk, ByteView bytes)>;

// Hashes every job's chunks on `threads` threads (0 = all cores) and returns,
// per job, the accumulator of its chunk leaves. The result does not depend on
// the thread count. With `visit`, each chunk is also handed to it (one read
// of the bytes for the digest and, say, the statistics of PROTOCOL 5.2).
std::vector<Accumulator> hash_chunks(const std::vector<ChunkJob> &jobs, unsigned threads,
                                     const ChunkVisitor &visit = {});

// Chunk root of whole tensors' bytes, one per input.
std::vector<Digest> chunk_roots(const std::vector<ByteView> &tensors, unsigned threads);

// The tensor digest, given the validated meta, byte length and chunk root.
Digest tensor_digest(const TensorMeta &meta, uint64_t nbytes, const Digest &chunk_root);

// One-shot: validates that data has the length meta implies and digests it.
Digest tensor_digest(const TensorMeta &meta, ByteView data, unsigned threads);

}  // namespace pot::hash
