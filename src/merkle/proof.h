// Proof verification by the RFC 9162 algorithms (section 2.1.3.2 inclusion,
// 2.1.4.2 consistency), with distinct errors for each way a proof can be bad:
//   kOutOfRange    index >= size, size1 > size2, size1 == 0
//   kMalformed     a leaf hash that is not 32 bytes, proof bytes not a
//                  multiple of 32
//   kLimit         more hashes than any tree of 2^64 leaves needs
//   kProofLength   the proof has the wrong number of hashes for the sizes
//   kProofMismatch well-formed, but it does not lead to the given root(s)
// Roots are compared as byte strings (as transparency-dev/merkle does), so a
// root of another length simply never matches a computed one.
#pragma once

#include <vector>

#include "hash/rfc6962.h"

namespace pot::merkle {

using hash::Digest;

inline constexpr size_t kMaxProofHashes = 128;

// Number of hashes in the inclusion proof of leaf index in a tree of size.
size_t inclusion_proof_length(uint64_t index, uint64_t size);
// Number of hashes in the consistency proof from size1 to size2.
size_t consistency_proof_length(uint64_t size1, uint64_t size2);

void verify_inclusion(uint64_t index, uint64_t size, ByteView leaf_hash,
                      const std::vector<Digest> &proof, ByteView root);
void verify_consistency(uint64_t size1, uint64_t size2, ByteView root1, ByteView root2,
                        const std::vector<Digest> &proof);

// Proof bytes (concatenated 32-byte hashes) to hashes, bounded before any
// allocation.
std::vector<Digest> decode_proof(ByteView b);
Bytes encode_proof(const std::vector<Digest> &proof);

}  // namespace pot::merkle
