// The merkle layer against an independent recursive reference: roots at every
// size, every inclusion and consistency proof up to 70 leaves, tampering,
// the file-backed tree and the log's saved state.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "merkle/log.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "core_test_util.h"
#include "test_util.h"

using namespace pot;
using pot::test::status_of;
using hash::Digest;

namespace {

std::vector<Digest> leaf_hashes(size_t n) {
  std::vector<Digest> out;
  for (size_t i = 0; i < n; ++i) {
    const std::string data = "leaf " + std::to_string(i);
    out.push_back(hash::leaf_hash(data.data(), data.size()));
  }
  return out;
}

// RFC 6962 section 2.1 definitions, recursively, as the reference.
Digest mth(const std::vector<Digest> &l, size_t lo, size_t hi) {
  if (hi == lo) return hash::empty_root();
  if (hi - lo == 1) return l[lo];
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return hash::node_hash(mth(l, lo, lo + k), mth(l, lo + k, hi));
}
std::vector<Digest> path(const std::vector<Digest> &l, size_t m, size_t lo, size_t hi) {
  if (hi - lo <= 1) return {};
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  std::vector<Digest> p;
  if (m < k) { p = path(l, m, lo, lo + k); p.push_back(mth(l, lo + k, hi)); }
  else { p = path(l, m - k, lo + k, hi); p.push_back(mth(l, lo, lo + k)); }
  return p;
}
std::vector<Digest> subproof(const std::vector<Digest> &l, size_t m, size_t lo, size_t hi, bool b) {
  const size_t n = hi - lo;
  if (m == n) return b ? std::vector<Digest>{} : std::vector<Digest>{mth(l, lo, hi)};
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  std::vector<Digest> p;
  if (m <= k) { p = subproof(l, m, lo, lo + k, b); p.push_back(mth(l, lo + k, hi)); }
  else { p = subproof(l, m - k, lo + k, hi, false); p.push_back(mth(l, lo, lo + k)); }
  return p;
}

constexpr size_t kMax = 70;

}  // namespace

TEST(Merkle, RootsAtEverySizeMatchReference) {
  const auto l = leaf_hashes(kMax);
  merkle::Log log;
  auto tree = merkle::StoredTree::in_memory();
  for (size_t n = 0; n <= kMax; ++n) {
    EXPECT_EQ(log.root(), mth(l, 0, n)) << n;
    EXPECT_EQ(tree->root(), mth(l, 0, n)) << n;
    if (n < kMax) {
      log.append_hash(l[n]);
      EXPECT_EQ(tree->append_hash(l[n]), n);
    }
  }
  for (size_t n = 0; n <= kMax; ++n) EXPECT_EQ(tree->root(n), mth(l, 0, n)) << n;
}

TEST(Merkle, EveryInclusionProofMatchesReferenceAndVerifies) {
  const auto l = leaf_hashes(kMax);
  auto tree = merkle::StoredTree::in_memory();
  for (const Digest &d : l) tree->append_hash(d);
  for (size_t n = 1; n <= kMax; ++n) {
    const Digest root = mth(l, 0, n);
    for (size_t i = 0; i < n; ++i) {
      const auto p = tree->inclusion_proof(i, n);
      ASSERT_EQ(p, path(l, i, 0, n)) << i << " in " << n;
      ASSERT_NO_THROW(merkle::verify_inclusion(i, n, l[i].view(), p, root.view()));
      // Any flipped bit, a wrong leaf, or a dropped/extra hash fails precisely.
      if (!p.empty()) {
        auto bad = p;
        bad[i % bad.size()].bytes[7] ^= 0x10;
        EXPECT_EQ(status_of([&] { merkle::verify_inclusion(i, n, l[i].view(), bad, root.view()); }),
                  Status::kProofMismatch);
        bad = p;
        bad.pop_back();
        EXPECT_EQ(status_of([&] { merkle::verify_inclusion(i, n, l[i].view(), bad, root.view()); }),
                  Status::kProofLength);
      }
      auto longer = p;
      longer.push_back(l[0]);
      EXPECT_EQ(status_of([&] { merkle::verify_inclusion(i, n, l[i].view(), longer, root.view()); }),
                Status::kProofLength);
      if (n > 1) {
        EXPECT_EQ(status_of([&] { merkle::verify_inclusion(i, n, l[(i + 1) % n].view(), p, root.view()); }),
                  Status::kProofMismatch);
      }
    }
    EXPECT_EQ(status_of([&] { merkle::verify_inclusion(n, n, l[0].view(), {}, root.view()); }),
              Status::kOutOfRange);
  }
}

TEST(Merkle, EveryConsistencyProofMatchesReferenceAndVerifies) {
  const auto l = leaf_hashes(kMax);
  auto tree = merkle::StoredTree::in_memory();
  for (const Digest &d : l) tree->append_hash(d);
  for (size_t n = 1; n <= kMax; ++n) {
    const Digest r2 = mth(l, 0, n);
    for (size_t m = 1; m <= n; ++m) {
      const Digest r1 = mth(l, 0, m);
      const auto p = tree->consistency_proof(m, n);
      ASSERT_EQ(p, subproof(l, m, 0, n, true)) << m << " -> " << n;
      ASSERT_NO_THROW(merkle::verify_consistency(m, n, r1.view(), r2.view(), p));
      if (m < n) {
        auto bad = p;
        bad[m % bad.size()].bytes[0] ^= 1;
        EXPECT_EQ(status_of([&] { merkle::verify_consistency(m, n, r1.view(), r2.view(), bad); }),
                  Status::kProofMismatch) << m << " -> " << n;
        EXPECT_EQ(status_of([&] { merkle::verify_consistency(m, n, r2.view(), r1.view(), p); }),
                  Status::kProofMismatch);
        bad = p;
        bad.push_back(r1);
        EXPECT_EQ(status_of([&] { merkle::verify_consistency(m, n, r1.view(), r2.view(), bad); }),
                  Status::kProofLength);
      }
    }
  }
  const Digest r = mth(l, 0, 3);
  EXPECT_EQ(status_of([&] { merkle::verify_consistency(0, 3, r.view(), r.view(), {}); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { merkle::verify_consistency(4, 3, r.view(), r.view(), {}); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { tree->consistency_proof(0, 3); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { tree->consistency_proof(3, kMax + 1); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { tree->inclusion_proof(3, 3); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { tree->root(kMax + 1); }), Status::kOutOfRange);
  EXPECT_EQ(status_of([&] { tree->leaf_hash(kMax); }), Status::kOutOfRange);
}

TEST(Merkle, ProofLengthsAtExtremeSizes) {
  const uint64_t big = UINT64_MAX;
  EXPECT_EQ(merkle::inclusion_proof_length(0, big), 64u);
  EXPECT_EQ(merkle::inclusion_proof_length(big - 1, big), 63u);  // popcount(2^64 - 2)
  EXPECT_LE(merkle::consistency_proof_length(12345, big), merkle::kMaxProofHashes);
  EXPECT_EQ(merkle::consistency_proof_length(big, big), 0u);
}

TEST(Merkle, DecodeProofIsBoundedAndStrict) {
  std::vector<uint8_t> b(33);
  EXPECT_EQ(status_of([&] { merkle::decode_proof(b); }), Status::kMalformed);
  b.resize(32 * (merkle::kMaxProofHashes + 1));
  EXPECT_EQ(status_of([&] { merkle::decode_proof(b); }), Status::kLimit);
  b.resize(64);
  EXPECT_EQ(merkle::decode_proof(b).size(), 2u);
}

TEST(Merkle, PostorderLayout) {
  // Node positions of the first 8 leaves: leaves and parents interleaved.
  EXPECT_EQ(merkle::postorder_position(0, 0), 0u);
  EXPECT_EQ(merkle::postorder_position(0, 1), 1u);
  EXPECT_EQ(merkle::postorder_position(1, 0), 2u);
  EXPECT_EQ(merkle::postorder_position(0, 2), 3u);
  EXPECT_EQ(merkle::postorder_position(0, 3), 4u);
  EXPECT_EQ(merkle::postorder_position(1, 1), 5u);
  EXPECT_EQ(merkle::postorder_position(2, 0), 6u);
  EXPECT_EQ(merkle::postorder_position(3, 0), 14u);
  for (uint64_t n = 0; n < 1000; ++n) EXPECT_LT(merkle::postorder_count(n), merkle::postorder_count(n + 1));
}

TEST(Merkle, FileTreePersistsAndReopens) {
  test::TempDir dir;
  const std::string file = dir.file("log.tree");
  const auto l = leaf_hashes(kMax);
  {
    auto tree = merkle::StoredTree::open(file);
    for (size_t i = 0; i < 37; ++i) tree->append_hash(l[i]);
    tree->flush();
    EXPECT_EQ(std::filesystem::file_size(file), 16 + 32 * merkle::postorder_count(37));
  }
  auto tree = merkle::StoredTree::open(file);
  EXPECT_EQ(tree->size(), 37u);
  EXPECT_EQ(tree->root(), mth(l, 0, 37));
  for (size_t i = 37; i < kMax; ++i) tree->append_hash(l[i]);  // continues after reopening
  EXPECT_EQ(tree->root(), mth(l, 0, kMax));
  // Reads see buffered appends before any flush.
  EXPECT_EQ(tree->inclusion_proof(kMax - 1, kMax), path(l, kMax - 1, 0, kMax));
}

TEST(Merkle, FileTreeRejectsForeignAndTornFiles) {
  test::TempDir dir;
  {
    std::ofstream(dir.file("foreign")) << "this is not a tree file at all";
  }
  EXPECT_EQ(status_of([&] { merkle::StoredTree::open(dir.file("foreign")); }), Status::kMalformed);
  const auto l = leaf_hashes(4);
  {
    auto tree = merkle::StoredTree::open(dir.file("t"));
    for (const Digest &d : l) tree->append_hash(d);
  }
  // 4 leaves = 7 nodes. Cutting the last node (an interrupted append) or half
  // a node (a torn write) is detected, not silently accepted.
  std::filesystem::resize_file(dir.file("t"), 16 + 32 * 6);
  EXPECT_EQ(status_of([&] { merkle::StoredTree::open(dir.file("t")); }), Status::kMalformed);
  std::filesystem::resize_file(dir.file("t"), 16 + 32 * 4 + 5);
  EXPECT_EQ(status_of([&] { merkle::StoredTree::open(dir.file("t")); }), Status::kMalformed);
  std::filesystem::resize_file(dir.file("t"), 16 + 32 * 4);  // 3 leaves: a valid size
  EXPECT_EQ(merkle::StoredTree::open(dir.file("t"))->root(), mth(l, 0, 3));
  EXPECT_EQ(status_of([&] { merkle::StoredTree::open(dir.path().string()); }), Status::kIo);
}

// What a resumed recorder does with a log its process left mid-append
// (docs/PROTOCOL.md 21.4 "Resuming"): count the whole appends, cut back.
TEST(Merkle, TornTreeFilesAreCutBackToWholeAppends) {
  test::TempDir dir;
  const auto l = leaf_hashes(12);
  {
    auto tree = merkle::StoredTree::open(dir.file("t"));
    for (const Digest &d : l) tree->append_hash(d);
  }
  EXPECT_EQ(merkle::tree_file_leaves(dir.file("t")), 12u);
  // Leaf 12's append (its leaf hash and two merged nodes) torn after two
  // hashes and half of the third.
  const uint64_t whole = 16 + 32 * merkle::postorder_count(11);
  ASSERT_EQ(merkle::postorder_count(12), merkle::postorder_count(11) + 3);
  std::filesystem::resize_file(dir.file("t"), whole + 2 * 32 + 17);
  EXPECT_EQ(status_of([&] { merkle::StoredTree::open(dir.file("t")); }), Status::kMalformed);
  EXPECT_EQ(merkle::tree_file_leaves(dir.file("t")), 11u);
  EXPECT_EQ(status_of([&] { merkle::truncate_tree_file(dir.file("t"), 12); }), Status::kMalformed);
  merkle::truncate_tree_file(dir.file("t"), 7);
  EXPECT_EQ(std::filesystem::file_size(dir.file("t")), 16 + 32 * merkle::postorder_count(7));
  {
    auto tree = merkle::StoredTree::open(dir.file("t"));
    EXPECT_EQ(tree->root(), mth(l, 0, 7));
    tree->append_hash(l[7]);  // appends continue where it was cut
    EXPECT_EQ(tree->root(), mth(l, 0, 8));
  }
  merkle::truncate_tree_file(dir.file("t"), 0);
  EXPECT_EQ(merkle::StoredTree::open(dir.file("t"))->size(), 0u);
  {
    std::ofstream(dir.file("foreign")) << "this is not a tree file at all";
  }
  EXPECT_EQ(status_of([&] { merkle::tree_file_leaves(dir.file("foreign")); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { merkle::truncate_tree_file(dir.file("missing"), 0); }), Status::kIo);
}

TEST(Merkle, LogSaveLoadRoundTripAndStrictness) {
  const auto l = leaf_hashes(kMax);
  merkle::Log log;
  for (size_t n = 0; n < kMax; ++n) {
    const Bytes saved = log.save();
    merkle::Log back = merkle::Log::load(saved);
    EXPECT_EQ(back.size(), n);
    EXPECT_EQ(back.root(), log.root());
    back.append_hash(l[n]);
    log.append_hash(l[n]);
    EXPECT_EQ(back.root(), log.root());
  }
  Bytes saved = log.save();
  saved.push_back(0);
  EXPECT_EQ(status_of([&] { merkle::Log::load(saved); }), Status::kMalformed);
  saved.resize(5);
  EXPECT_EQ(status_of([&] { merkle::Log::load(saved); }), Status::kMalformed);
  Bytes huge(8, 0xff);  // claims 2^64-1 leaves (64 border hashes) but holds none
  EXPECT_EQ(status_of([&] { merkle::Log::load(huge); }), Status::kMalformed);
}
