// The prover-side tree: every leaf hash and every perfect subtree hash is
// stored, so inclusion proofs for any (index, size) and consistency proofs for
// any (size1, size2) are served without recomputation. Nodes are laid out in
// post-order, which makes the file append-only: after n leaves it holds
// exactly 2n - popcount(n) hashes (docs/PROTOCOL.md, "Stored tree file").
// A 10-million-leaf tree is a 640 MB file and needs O(log n) memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hash/rfc6962.h"

namespace pot::merkle {

using hash::Digest;

class NodeStore;

class StoredTree {
 public:
  // A tree in memory (nothing on disk).
  static std::unique_ptr<StoredTree> in_memory();
  // Opens the tree file at path, creating an empty one when it does not
  // exist. kIo on I/O errors, kMalformed when the file is not a tree file or
  // ends inside an append.
  static std::unique_ptr<StoredTree> open(const std::string &path);
  ~StoredTree();

  uint64_t append(ByteView leaf_data) { return append_hash(hash::leaf_hash(leaf_data)); }
  // Appends a leaf hash and returns its index.
  uint64_t append_hash(const Digest &leaf_hash);
  // Writes buffered nodes to the file (a no-op in memory). Appends are
  // buffered; call flush (or destroy the tree) before another process reads.
  void flush();

  uint64_t size() const { return size_; }
  // Root of the first `size` leaves (size <= this->size()).
  Digest root(uint64_t size) const;
  Digest root() const { return root(size_); }
  Digest leaf_hash(uint64_t index) const;
  // RFC 6962 PATH(index, D[size]); kOutOfRange unless index < size <= size().
  std::vector<Digest> inclusion_proof(uint64_t index, uint64_t size) const;
  // RFC 6962 PROOF(size1, D[size2]); kOutOfRange unless
  // 0 < size1 <= size2 <= size().
  std::vector<Digest> consistency_proof(uint64_t size1, uint64_t size2) const;

 private:
  explicit StoredTree(std::unique_ptr<NodeStore> store);
  Digest node(unsigned level, uint64_t index) const;
  // MTH(D[lo:hi]) where lo is a multiple of bit_ceil(hi - lo).
  Digest subtree(uint64_t lo, uint64_t hi) const;

  std::unique_ptr<NodeStore> store_;
  uint64_t size_ = 0;
  std::vector<hash::Subtree> border_;  // the right border, as hash::Accumulator
};

// Cuts the tree file at path back to its first `size` leaves: the file is
// truncated after the 2 size - popcount(size) hashes a tree of that size
// holds, discarding later (or torn) appends, and synced. kMalformed when it
// is not a tree file or holds fewer hashes; kIo on I/O errors. The kept
// hashes are not read: the caller checks the leaves it needs.
void truncate_tree_file(const std::string &path, uint64_t size);
// The number of leaves whose appends a tree file holds whole (a torn append
// after them is ignored); kMalformed when it is not a tree file.
uint64_t tree_file_leaves(const std::string &path);

// Position of node (level, index) in post-order: the number of nodes written
// before it. Exposed for tests and docs/PROTOCOL.md.
uint64_t postorder_position(unsigned level, uint64_t index);
// Nodes written after n leaves: 2n - popcount(n).
inline uint64_t postorder_count(uint64_t n) { return 2 * n - __builtin_popcountll(n); }

}  // namespace pot::merkle
