// Every vector of tests/vectors/rfc6962.json (published RFC 6962 / RFC 9162
// vectors from google/certificate-transparency and transparency-dev/merkle)
// through the C++ merkle layer.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <bit>

#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/sha256.h"
#include "merkle/log.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "core_test_util.h"
#include "test_util.h"

using namespace pot;
using pot::test::status_of;
using hash::Digest;
using nlohmann::json;

namespace {

const json &vectors() {
  static const json v = test::load_vectors("rfc6962.json");
  return v;
}

std::vector<std::vector<uint8_t>> leaf_inputs() {
  std::vector<std::vector<uint8_t>> out;
  for (const json &l : vectors()["leaf_inputs"]) out.push_back(test::unhex(l["hex"]));
  return out;
}

std::vector<Digest> proof_of(const json &arr) {
  std::vector<Digest> p;
  for (const json &h : arr) p.push_back(Digest::from_hex(h.get<std::string>()));
  return p;
}

std::unique_ptr<merkle::StoredTree> tree_of(size_t n) {
  auto tree = merkle::StoredTree::in_memory();
  auto leaves = leaf_inputs();
  for (size_t i = 0; i < n; ++i) tree->append(leaves[i]);
  return tree;
}

// Plain recursive MTH straight from RFC 6962 section 2.1, as the reference.
Digest reference_mth(const std::vector<std::vector<uint8_t>> &d, size_t lo, size_t hi) {
  if (hi == lo) return hash::sha256(nullptr, 0);
  if (hi - lo == 1) return hash::leaf_hash(d[lo]);
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return hash::node_hash(reference_mth(d, lo, lo + k), reference_mth(d, lo + k, hi));
}

}  // namespace

TEST(Rfc6962Vectors, EmptyTreeRoot) {
  EXPECT_EQ(hash::empty_root().hex(), vectors()["empty_tree_root"]["hex"]);
  EXPECT_EQ(merkle::Log().root().hex(), vectors()["empty_tree_root"]["hex"]);
  EXPECT_EQ(merkle::StoredTree::in_memory()->root().hex(), vectors()["empty_tree_root"]["hex"]);
}

TEST(Rfc6962Vectors, HasherKnownAnswers) {
  for (const json &k : vectors()["hasher_kats"]) {
    SCOPED_TRACE(k["desc"].get<std::string>());
    Digest got;
    if (k["op"] == "empty_root") got = hash::empty_root();
    else if (k["op"] == "leaf") got = hash::leaf_hash(test::unhex(k["data_hex"]));
    else {
      // Children here are short byte strings, so hash them by hand.
      hash::Sha256 h;
      got = h.update_u8(1).update(test::unhex(k["left_hex"])).update(test::unhex(k["right_hex"])).finish();
    }
    EXPECT_EQ(got.hex(), k["hex"]);
  }
}

TEST(Rfc6962Vectors, RootsFromLogStoredTreeAndReference) {
  auto leaves = leaf_inputs();
  for (const json &r : vectors()["roots"]) {
    const size_t n = r["tree_size"];
    merkle::Log log;
    for (size_t i = 0; i < n; ++i) log.append(leaves[i]);
    EXPECT_EQ(log.root().hex(), r["hex"]) << "log, size " << n;
    EXPECT_EQ(tree_of(8)->root(n).hex(), r["hex"]) << "stored tree, size " << n;
    EXPECT_EQ(reference_mth(leaves, 0, n).hex(), r["hex"]) << "reference, size " << n;
  }
}

TEST(Rfc6962Vectors, NodeHashesOfCompleteSubtrees) {
  auto leaves = leaf_inputs();
  for (const json &nd : vectors()["node_hashes"]) {
    const size_t lo = nd["covers_leaves"][0], hi = nd["covers_leaves"][1];
    EXPECT_EQ(reference_mth(leaves, lo, hi).hex(), nd["hex"]);
    // A complete subtree [lo, hi) is the root of its own leaves.
    merkle::Log log;
    for (size_t i = lo; i < hi; ++i) log.append(leaves[i]);
    EXPECT_EQ(log.root().hex(), nd["hex"]) << lo << ".." << hi;
  }
}

TEST(Rfc6962Vectors, InclusionProofsGenerateAndVerify) {
  auto tree = tree_of(8);
  for (const json &p : vectors()["inclusion_proofs"]) {
    const uint64_t index = p["leaf_index"], size = p["tree_size"];
    SCOPED_TRACE(testing::Message() << "index " << index << " size " << size);
    const auto want = proof_of(p["proof"]);
    EXPECT_EQ(tree->inclusion_proof(index, size), want);
    EXPECT_EQ(merkle::inclusion_proof_length(index, size), want.size());
    const Digest root = Digest::from_hex(p["root"].get<std::string>());
    EXPECT_EQ(tree->root(size), root);
    const Digest leaf = hash::leaf_hash(test::unhex(p["leaf_input_hex"]));
    EXPECT_NO_THROW(merkle::verify_inclusion(index, size, leaf.view(), want, root.view()));
  }
}

TEST(Rfc6962Vectors, ConsistencyProofsGenerateAndVerify) {
  auto tree = tree_of(8);
  for (const json &p : vectors()["consistency_proofs"]) {
    const uint64_t m = p["size1"], n = p["size2"];
    SCOPED_TRACE(testing::Message() << m << " -> " << n);
    const auto want = proof_of(p["proof"]);
    EXPECT_EQ(tree->consistency_proof(m, n), want);
    EXPECT_EQ(merkle::consistency_proof_length(m, n), want.size());
    const Digest r1 = Digest::from_hex(p["root1"].get<std::string>());
    const Digest r2 = Digest::from_hex(p["root2"].get<std::string>());
    EXPECT_EQ(tree->root(m), r1);
    EXPECT_EQ(tree->root(n), r2);
    EXPECT_NO_THROW(merkle::verify_consistency(m, n, r1.view(), r2.view(), want));
  }
}

TEST(Rfc6962Vectors, Rfc9162SymbolicExample) {
  // Section 2.1.5: a tree of 7 leaves, proofs named by the ranges they cover.
  const json &ex = vectors()["rfc9162_example_7_leaves"];
  auto leaves = leaf_inputs();
  auto tree = tree_of(7);
  auto ranges = [&](const json &rs) {
    std::vector<Digest> out;
    for (const json &r : rs) out.push_back(reference_mth(leaves, r[0], r[1]));
    return out;
  };
  for (const json &p : ex["inclusion"]) {
    SCOPED_TRACE(p["names"].get<std::string>());
    EXPECT_EQ(tree->inclusion_proof(p["leaf_index"], 7), ranges(p["ranges"]));
  }
  for (const json &p : ex["consistency"]) {
    SCOPED_TRACE(p["names"].get<std::string>());
    EXPECT_EQ(tree->consistency_proof(p["size1"], 7), ranges(p["ranges"]));
  }
}

// The 196 verifier probes of transparency-dev/merkle (testdata/): 12 must
// verify, 184 must be rejected.
TEST(Rfc6962Vectors, VerifierProbes) {
  size_t pass = 0, fail = 0;
  for (const json &p : vectors()["verifier_probes"]["inclusion"]) {
    SCOPED_TRACE(p["source"].get<std::string>());
    const auto leaf = test::unhex(p["leaf_hash"]), root = test::unhex(p["root"]);
    const Status s = status_of([&] {
      merkle::verify_inclusion(p["leaf_index"], p["tree_size"], leaf, proof_of(p["proof"]), root);
    });
    EXPECT_EQ(s != Status::kOk, p["want_error"].get<bool>()) << status_name(s);
    (s == Status::kOk ? pass : fail)++;
  }
  for (const json &p : vectors()["verifier_probes"]["consistency"]) {
    SCOPED_TRACE(p["source"].get<std::string>());
    const auto r1 = test::unhex(p["root1"]), r2 = test::unhex(p["root2"]);
    const Status s = status_of([&] {
      merkle::verify_consistency(p["size1"], p["size2"], r1, r2, proof_of(p["proof"]));
    });
    EXPECT_EQ(s != Status::kOk, p["want_error"].get<bool>()) << status_name(s);
    (s == Status::kOk ? pass : fail)++;
  }
  EXPECT_EQ(pass, 12u);
  EXPECT_EQ(fail, 184u);
}

// The verifier's error is the precise one for each kind of bad probe.
TEST(Rfc6962Vectors, VerifierProbeErrorKinds) {
  for (const json &p : vectors()["verifier_probes"]["inclusion"]) {
    if (!p["want_error"].get<bool>()) continue;
    const std::string desc = p["desc"];
    const uint64_t index = p["leaf_index"], size = p["tree_size"];
    const auto leaf = test::unhex(p["leaf_hash"]), root = test::unhex(p["root"]);
    SCOPED_TRACE(desc);
    bool elements_ok = true;
    for (const json &h : p["proof"]) elements_ok &= h.get<std::string>().size() == 64;
    if (!elements_ok) {  // an empty "garbage" element: malformed before any hashing
      EXPECT_EQ(status_of([&] { proof_of(p["proof"]); }), Status::kMalformed);
      continue;
    }
    const auto proof = proof_of(p["proof"]);
    const Status s = status_of([&] { merkle::verify_inclusion(index, size, leaf, proof, root); });
    if (index >= size) EXPECT_EQ(s, Status::kOutOfRange);
    else if (leaf.size() != 32) EXPECT_EQ(s, Status::kMalformed);
    else if (proof.size() != merkle::inclusion_proof_length(index, size)) EXPECT_EQ(s, Status::kProofLength);
    else EXPECT_EQ(s, Status::kProofMismatch);
  }
}

TEST(Rfc6962Vectors, AggregateSubtreeHashes) {
  // Rolling SHA-256 over MTH of every valid range [start, end) of 130 leaves
  // d[i] = bytes([i]) (draft-ietf-plants-merkle-tree-certs appendix).
  std::vector<std::vector<uint8_t>> d;
  for (int i = 0; i < 130; ++i) d.push_back({static_cast<uint8_t>(i)});
  hash::Sha256 roll_hash, roll_incl;
  for (uint64_t end = 0; end <= 130; ++end) {
    for (uint64_t start = 0; start <= end; ++start) {
      const uint64_t width = end - start;
      if (!(start == 0 || start == end || start % std::bit_ceil(width) == 0)) continue;
      // Our accumulator started at `start` gives MTH(d[start:end]) for these ranges.
      hash::Accumulator acc(start);
      for (uint64_t i = start; i < end; ++i) acc.push_leaf(hash::leaf_hash(d[i]));
      const Digest mth = acc.root();
      ASSERT_EQ(mth, reference_mth(d, start, end));
      const std::string line = fmt::format("[{}, {}) {}\n", start, end, mth.hex());
      roll_hash.update(line.data(), line.size());
      if (width == 0) continue;
      // Inclusion proofs inside the subtree: a stored tree of the range's leaves.
      auto tree = merkle::StoredTree::in_memory();
      for (uint64_t i = start; i < end; ++i) tree->append(d[i]);
      for (uint64_t index = start; index < end; ++index) {
        std::string l = fmt::format("{} [{}, {})", index, start, end);
        for (const Digest &h : tree->inclusion_proof(index - start, width)) l += fmt::format(" {}", h.hex());
        l += "\n";
        roll_incl.update(l.data(), l.size());
      }
    }
  }
  const json &agg = vectors()["aggregate_vectors"];
  EXPECT_EQ(roll_hash.finish().hex(), agg[0]["hex"]);
  EXPECT_EQ(roll_incl.finish().hex(), agg[1]["hex"]);
}
