#include "merkle/proof.h"

#include <algorithm>
#include <bit>

#include "common/error.h"

namespace pot::merkle {

using hash::node_hash;

size_t inclusion_proof_length(uint64_t index, uint64_t size) {
  if (index >= size)
    fail(Status::kOutOfRange, "leaf index {} is not below the tree size {}", index, size);
  const unsigned inner = std::bit_width(index ^ (size - 1));
  return inner + std::popcount(inner >= 64 ? 0 : index >> inner);
}

size_t consistency_proof_length(uint64_t size1, uint64_t size2) {
  if (size1 == 0) fail(Status::kOutOfRange, "a consistency proof needs size1 > 0");
  if (size1 > size2)
    fail(Status::kOutOfRange, "size1 {} is larger than size2 {}", size1, size2);
  // Walks RFC 6962's SUBPROOF recursion without hashing.
  size_t n = 0;
  uint64_t m = size1, lo = 0, hi = size2;
  bool whole = true;
  while (m != hi - lo) {
    const uint64_t k = hash::split_point(hi - lo);
    if (m <= k) {
      hi = lo + k;
    } else {
      m -= k;
      lo += k;
      whole = false;
    }
    ++n;
  }
  return n + (whole ? 0 : 1);
}

namespace {

void check_count(size_t got, size_t want, const char *kind) {
  if (got != want)
    fail(Status::kProofLength, "{} proof has {} hashes, the sizes require {}", kind, got, want);
}

bool equal(ByteView a, const Digest &b) { return std::ranges::equal(a, b.bytes); }

}  // namespace

void verify_inclusion(uint64_t index, uint64_t size, ByteView leaf_hash,
                      const std::vector<Digest> &proof, ByteView root) {
  const size_t want = inclusion_proof_length(index, size);
  if (leaf_hash.size() != hash::kDigestSize)
    fail(Status::kMalformed, "leaf hash is {} bytes, not 32", leaf_hash.size());
  check_count(proof.size(), want, "inclusion");
  uint64_t fn = index, sn = size - 1;
  Digest r = Digest::from_bytes(leaf_hash);
  for (const Digest &p : proof) {
    if ((fn & 1) || fn == sn) {
      r = node_hash(p, r);
      while (!(fn & 1) && fn != 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else {
      r = node_hash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) fail(Status::kInternal, "inclusion proof walk ended at sn = {}", sn);
  if (!equal(root, r))
    fail(Status::kProofMismatch, "inclusion proof of leaf {} in a tree of {} leads to {}, not the given root",
         index, size, r.hex());
}

void verify_consistency(uint64_t size1, uint64_t size2, ByteView root1, ByteView root2,
                        const std::vector<Digest> &proof) {
  const size_t want = consistency_proof_length(size1, size2);
  check_count(proof.size(), want, "consistency");
  if (size1 == size2) {
    if (!std::ranges::equal(root1, root2))
      fail(Status::kProofMismatch, "trees of equal size {} have different roots", size1);
    return;
  }
  std::vector<Digest> path;
  path.reserve(proof.size() + 1);
  if (std::has_single_bit(size1)) {
    if (root1.size() != hash::kDigestSize)
      fail(Status::kProofMismatch, "root1 is {} bytes and cannot be a tree root", root1.size());
    path.push_back(Digest::from_bytes(root1));
  }
  path.insert(path.end(), proof.begin(), proof.end());
  uint64_t fn = size1 - 1, sn = size2 - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Digest fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); ++i) {
    const Digest &c = path[i];
    if ((fn & 1) || fn == sn) {
      fr = node_hash(c, fr);
      sr = node_hash(c, sr);
      while (!(fn & 1) && fn != 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else {
      sr = node_hash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) fail(Status::kInternal, "consistency proof walk ended at sn = {}", sn);
  if (!equal(root1, fr))
    fail(Status::kProofMismatch, "consistency proof {} -> {} does not lead to root1", size1, size2);
  if (!equal(root2, sr))
    fail(Status::kProofMismatch, "consistency proof {} -> {} does not lead to root2", size1, size2);
}

std::vector<Digest> decode_proof(ByteView b) {
  if (b.size() % hash::kDigestSize != 0)
    fail(Status::kMalformed, "proof is {} bytes, not a multiple of 32", b.size());
  const size_t n = b.size() / hash::kDigestSize;
  if (n > kMaxProofHashes)
    fail(Status::kLimit, "proof holds {} hashes, more than any tree needs ({})", n,
         kMaxProofHashes);
  std::vector<Digest> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = Digest::from_bytes(b.subspan(32 * i, 32));
  return out;
}

Bytes encode_proof(const std::vector<Digest> &proof) {
  Bytes out;
  out.reserve(proof.size() * 32);
  for (const Digest &d : proof) put_bytes(out, d.view());
  return out;
}

}  // namespace pot::merkle
