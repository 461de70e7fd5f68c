// RFC 6962 section 2.1 primitives shared by the chunk tree of a tensor
// (this layer) and the checkpoint log (src/merkle): leaf and node hashes and
// an accumulator of aligned perfect subtrees (a "compact range").
#pragma once

#include <cstdint>
#include <vector>

#include "hash/sha256.h"

namespace pot::hash {

// MTH({}) = SHA-256(""), the root of the empty tree.
Digest empty_root();
// SHA-256(0x00 || data).
Digest leaf_hash(const void *data, size_t len);
inline Digest leaf_hash(ByteView b) { return leaf_hash(b.data(), b.size()); }
// SHA-256(0x01 || left || right).
Digest node_hash(const Digest &left, const Digest &right);

// Largest power of two strictly smaller than n (n >= 2).
uint64_t split_point(uint64_t n);

// A perfect subtree: 2^level leaves starting at leaf index start, where start
// is a multiple of 2^level.
struct Subtree {
  uint64_t start = 0;
  unsigned level = 0;
  Digest hash;
  uint64_t end() const { return start + (uint64_t{1} << level); }
};

// Splits [begin, end) into maximal aligned perfect subtrees, left to right
// (hashes left empty). Every such subtree is a node of the RFC 6962 tree of
// any size >= end.
std::vector<Subtree> decompose(uint64_t begin, uint64_t end);

// Accumulates consecutive aligned perfect subtrees and merges siblings, so it
// holds at most 64 entries whatever the number of leaves. Started at leaf 0 it
// yields the RFC 6962 root at any size (the trainer-side streaming log).
class Accumulator {
 public:
  explicit Accumulator(uint64_t start = 0) : start_(start), end_(start) {}

  // Appends one leaf hash (a level-0 subtree).
  void push_leaf(const Digest &leaf) { push(Subtree{end_, 0, leaf}); }
  // Appends a perfect subtree that starts where the accumulator ends and is
  // aligned; throws pot::Error(kInvalidArgument) otherwise.
  void push(const Subtree &s);

  uint64_t start() const { return start_; }
  uint64_t end() const { return end_; }
  // The maximal aligned subtrees covering [start, end), left to right.
  const std::vector<Subtree> &subtrees() const { return stack_; }
  // Right fold of subtrees(). It is MTH(D[start:end]) when start is a
  // multiple of bit_ceil(end - start), in particular when start == 0.
  Digest root() const;

 private:
  uint64_t start_;
  uint64_t end_;
  std::vector<Subtree> stack_;
};

// Right fold of consecutive subtrees: node(s0, node(s1, ... sk)).
Digest fold_right(const std::vector<Subtree> &subtrees);

}  // namespace pot::hash
