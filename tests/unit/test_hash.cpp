// Tensor and state digests: a from-the-spec reimplementation (plain SHA-256 and
// recursive MTH, as docs/PROTOCOL.md describes them), thread-count
// invariance, chunk boundaries, sharded ranges, and every validation error.
#include <gtest/gtest.h>

#include "common/error.h"
#include "hash/range.h"
#include "hash/parallel.h"
#include "hash/state.h"
#include "core_test_util.h"
#include "test_util.h"

using namespace pot;
using pot::test::status_of;
using namespace pot::hash;

namespace {

// --- Reference, written from docs/PROTOCOL.md sections 2-4 -----------------
Bytes le(uint64_t v, int n) {
  Bytes b;
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return b;
}
Digest sha(const Bytes &b) { return sha256(b.data(), b.size()); }
Digest ref_mth(const std::vector<Bytes> &leaves, size_t lo, size_t hi) {
  if (lo == hi) return sha({});
  if (hi - lo == 1) {
    Bytes b{0};
    b.insert(b.end(), leaves[lo].begin(), leaves[lo].end());
    return sha(b);
  }
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  Bytes b{1};
  const Digest l = ref_mth(leaves, lo, lo + k), r = ref_mth(leaves, lo + k, hi);
  b.insert(b.end(), l.bytes.begin(), l.bytes.end());
  b.insert(b.end(), r.bytes.begin(), r.bytes.end());
  return sha(b);
}
Digest ref_tensor(const std::string &name, uint8_t dtype, const std::vector<uint64_t> &shape,
                  const Bytes &data) {
  std::vector<Bytes> chunks;
  for (size_t off = 0; off < data.size(); off += 65536)
    chunks.emplace_back(data.begin() + off, data.begin() + std::min(data.size(), off + 65536));
  const Digest root = ref_mth(chunks, 0, chunks.size());
  const std::string tag = "pot/v1/tensor";
  Bytes b{static_cast<uint8_t>(tag.size())};
  b.insert(b.end(), tag.begin(), tag.end());
  for (uint8_t x : le(name.size(), 4)) b.push_back(x);
  b.insert(b.end(), name.begin(), name.end());
  b.push_back(dtype);
  for (uint8_t x : le(shape.size(), 4)) b.push_back(x);
  for (uint64_t d : shape) for (uint8_t x : le(d, 8)) b.push_back(x);
  for (uint8_t x : le(data.size(), 8)) b.push_back(x);
  for (uint8_t x : le(65536, 4)) b.push_back(x);
  b.insert(b.end(), root.bytes.begin(), root.bytes.end());
  return sha(b);
}
Digest ref_state(const std::vector<std::pair<std::string, Digest>> &sorted) {
  std::vector<Bytes> leaves;
  for (const auto &[n, d] : sorted) leaves.emplace_back(d.bytes.begin(), d.bytes.end());
  const Digest root = ref_mth(leaves, 0, leaves.size());
  const std::string tag = "pot/v1/state";
  Bytes b{static_cast<uint8_t>(tag.size())};
  b.insert(b.end(), tag.begin(), tag.end());
  for (uint8_t x : le(sorted.size(), 8)) b.push_back(x);
  b.insert(b.end(), root.bytes.begin(), root.bytes.end());
  return sha(b);
}
// -----------------------------------------------------------------------------

}  // namespace

TEST(TensorDigest, MatchesReferenceAcrossChunkBoundaries) {
  // Lengths around the chunk size and around the 64-chunk work blocks.
  const size_t C = kChunkSize;
  for (size_t n : {size_t{0}, size_t{1}, C - 1, C, C + 1, 3 * C, 64 * C - 4, 64 * C, 64 * C + 4,
                   130 * C + 12}) {
    const Bytes data = test::pseudo_random_bytes(n, n);
    const TensorMeta meta{"layer.weight", DType::kU8, {n}};
    const Digest want = ref_tensor("layer.weight", 2, {n}, data);
    for (unsigned threads : {1u, 2u, 3u, 8u})
      EXPECT_EQ(tensor_digest(meta, data, threads), want) << n << " bytes, " << threads << " threads";
  }
}

TEST(TensorDigest, BindsNameDtypeAndShape) {
  const Bytes data = test::pseudo_random_bytes(24, 1);
  const Digest base = tensor_digest(TensorMeta{"w", DType::kF32, {2, 3}}, data, 1);
  EXPECT_EQ(base, ref_tensor("w", 12, {2, 3}, data));
  EXPECT_NE(base, tensor_digest(TensorMeta{"v", DType::kF32, {2, 3}}, data, 1));
  EXPECT_NE(base, tensor_digest(TensorMeta{"w", DType::kI32, {2, 3}}, data, 1));
  EXPECT_NE(base, tensor_digest(TensorMeta{"w", DType::kF32, {3, 2}}, data, 1));
  EXPECT_NE(base, tensor_digest(TensorMeta{"w", DType::kF32, {6}}, data, 1));
  EXPECT_NE(base, tensor_digest(TensorMeta{"w", DType::kF64, {3}}, data, 1));
  // A scalar (rank 0) and every dtype's element size.
  EXPECT_EQ(tensor_digest(TensorMeta{"s", DType::kF64, {}}, Bytes(8, 7), 1),
            ref_tensor("s", 13, {}, Bytes(8, 7)));
  const std::pair<DType, size_t> sizes[] = {
      {DType::kBool, 1}, {DType::kU8, 1},  {DType::kI8, 1},   {DType::kI16, 2}, {DType::kU16, 2},
      {DType::kI32, 4},  {DType::kU32, 4}, {DType::kI64, 8},  {DType::kU64, 8}, {DType::kF16, 2},
      {DType::kBF16, 2}, {DType::kF32, 4}, {DType::kF64, 8}};
  for (auto [d, s] : sizes) {
    EXPECT_EQ(dtype_size(d), s);
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
    const Bytes b = test::pseudo_random_bytes(5 * s, s);
    EXPECT_EQ(tensor_digest(TensorMeta{"t", d, {5}}, b, 1),
              ref_tensor("t", static_cast<uint8_t>(d), {5}, b));
  }
}

TEST(TensorDigest, RejectsBadMetaWithPreciseErrors) {
  const Bytes data(16);
  auto digest = [&](TensorMeta m, size_t n = 16) { return status_of([&] { tensor_digest(m, ByteView(data).first(n), 1); }); };
  EXPECT_EQ(digest({"", DType::kF32, {4}}), Status::kInvalidArgument);
  EXPECT_EQ(digest({std::string("a\0b", 3), DType::kF32, {4}}), Status::kInvalidArgument);
  EXPECT_EQ(digest({"\xff\xfe", DType::kF32, {4}}), Status::kInvalidArgument);
  EXPECT_EQ(digest({std::string(kMaxNameBytes + 1, 'a'), DType::kF32, {4}}), Status::kLimit);
  EXPECT_EQ(digest({std::string(kMaxNameBytes, 'a'), DType::kF32, {4}}), Status::kOk);
  EXPECT_EQ(digest({"w", static_cast<DType>(99), {4}}), Status::kInvalidArgument);
  EXPECT_EQ(digest({"w", DType::kF32, {5}}), Status::kInvalidArgument);
  EXPECT_EQ(digest({"w", DType::kF32, {4}}, 15), Status::kInvalidArgument);
  EXPECT_EQ(digest({"w", DType::kF32, std::vector<uint64_t>(kMaxDims + 1, 1)}), Status::kLimit);
  EXPECT_EQ(digest({"w", DType::kF64, {uint64_t{1} << 62, 4}}), Status::kLimit);  // overflow
  EXPECT_EQ(digest({"w", DType::kF32, {0, uint64_t{1} << 63}}, 0), Status::kOk);  // empty
}

TEST(StateDigest, CanonicalOrderReferenceAndDuplicates) {
  const Bytes a = test::pseudo_random_bytes(1000, 1), b = test::pseudo_random_bytes(64, 2);
  StateBuilder s1(1), s2(2);
  s1.add_tensor({"model.b", DType::kF32, {250}}, a);
  s1.add_tensor({"model.a", DType::kU8, {64}}, b);
  s2.add_tensor({"model.a", DType::kU8, {64}}, b);
  s2.add_tensor({"model.b", DType::kF32, {250}}, a);
  EXPECT_EQ(s1.digest(), s2.digest());
  EXPECT_EQ(s1.digest(), ref_state({{"model.a", ref_tensor("model.a", 2, {64}, b)},
                                    {"model.b", ref_tensor("model.b", 12, {250}, a)}}));
  EXPECT_EQ(status_of([&] { s1.add_tensor({"model.a", DType::kU8, {64}}, b); }), Status::kDuplicate);
  EXPECT_EQ(status_of([&] { s1.add_tensor_digest("model.b", Digest{}); }), Status::kDuplicate);
  // Bytewise order: "B" (0x42) sorts before "a" (0x61), "é" (0xc3 0xa9) after "z".
  StateBuilder s3(1);
  for (const char *n : {"z", "\xc3\xa9", "a", "B"}) s3.add_tensor_digest(n, sha256(n, 1));
  std::vector<std::pair<std::string, Digest>> want;
  for (const char *n : {"B", "a", "z", "\xc3\xa9"}) want.emplace_back(n, sha256(n, 1));
  EXPECT_EQ(s3.digest(), ref_state(want));
  EXPECT_EQ(StateBuilder().digest(), ref_state({}));
}

TEST(ChunkRanges, ShardedRanksAssembleTheSameDigest) {
  const size_t C = kChunkSize;
  const size_t n = 200 * C + 333;
  const Bytes data = test::pseudo_random_bytes(n, 9);
  const TensorMeta meta{"sharded", DType::kU8, {n}};
  const Digest whole = tensor_digest(meta, data, 2);
  // Uneven splits on chunk boundaries, added out of order, each through its encoding.
  const std::vector<size_t> cuts = {0, 3 * C, 64 * C, 65 * C, 131 * C, n};
  TensorAssembler as(meta);
  for (size_t i = cuts.size() - 1; i-- > 0;) {
    const ChunkRange r = hash_range(ByteView(data).subspan(cuts[i], cuts[i + 1] - cuts[i]), cuts[i], n, 1);
    EXPECT_LE(r.subtrees.size(), 16u);  // O(log n) hashes per rank
    as.add(ChunkRange::decode(r.encode()));
  }
  EXPECT_EQ(as.finish(), whole);

  TensorAssembler missing(meta);
  missing.add(hash_range(ByteView(data).first(3 * C), 0, n, 1));
  EXPECT_EQ(status_of([&] { missing.finish(); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { missing.add(hash_range(ByteView(data).first(3 * C), 0, n, 1)); }),
            Status::kInvalidArgument);  // overlap
  EXPECT_EQ(status_of([&] { hash_range(ByteView(data).subspan(1, C), 1, n, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { hash_range(ByteView(data).first(C + 1), 0, n, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { hash_range(ByteView(data).first(C), n, n, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { missing.add(hash_range(ByteView(data).first(C), 0, n + 1, 1)); }),
            Status::kInvalidArgument);  // other tensor size
  // Strict decoding.
  Bytes enc = hash_range(ByteView(data).first(3 * C), 0, n, 1).encode();
  for (size_t cut : {size_t{0}, size_t{10}, enc.size() - 1})
    EXPECT_EQ(status_of([&] { ChunkRange::decode(ByteView(enc).first(cut)); }), Status::kMalformed);
  Bytes extra = enc;
  extra.push_back(0);
  EXPECT_EQ(status_of([&] { ChunkRange::decode(extra); }), Status::kMalformed);
  Bytes bad_version = enc;
  bad_version[0] = 2;
  EXPECT_EQ(status_of([&] { ChunkRange::decode(bad_version); }), Status::kMalformed);
  Bytes huge = enc;
  huge[25] = huge[26] = huge[27] = huge[28] = 0xff;  // claims 2^32-1 hashes
  EXPECT_EQ(status_of([&] { ChunkRange::decode(huge); }), Status::kMalformed);
}

TEST(Parallel, ExceptionsPropagateAndAllItemsRun) {
  std::vector<int> hit(1000, 0);
  parallel_for(hit.size(), 4, [&](size_t i) { hit[i]++; });
  EXPECT_EQ(std::count(hit.begin(), hit.end(), 1), 1000);
  EXPECT_EQ(status_of([&] {
              parallel_for(100, 4, [](size_t i) {
                if (i == 57) fail(Status::kInternal, "item {}", i);
              });
            }),
            Status::kInternal);
}
