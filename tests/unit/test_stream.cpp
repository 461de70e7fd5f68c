// Token-stream datasets (src/data/stream.h): shard roots against a recursive
// RFC 6962 MTH written here, every window of a two-shard dataset proven and
// checked (windows across chunk and shard boundaries), the samples they
// give, and each forged or malformed proof and descriptor refused with its
// status.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "data/stream.h"
#include "hash/rfc6962.h"
#include "hash/safetensors.h"
#include "core_test_util.h"
#include "test_util.h"

using namespace pot;
using namespace pot::data;
using pot::test::status_of;

namespace {

// MTH by the definition of RFC 6962 section 2.1, recursively.
hash::Digest mth(const std::vector<Bytes> &leaves, size_t lo, size_t hi) {
  if (hi - lo == 1) return hash::leaf_hash(leaves[lo]);
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return hash::node_hash(mth(leaves, lo, lo + k), mth(leaves, lo + k, hi));
}

hash::Digest reference_shard_root(const Bytes &shard) {
  std::vector<Bytes> chunks;
  for (size_t at = 0; at < shard.size(); at += kStreamChunkSize)
    chunks.emplace_back(shard.begin() + static_cast<long>(at),
                        shard.begin() + static_cast<long>(std::min<size_t>(shard.size(), at + kStreamChunkSize)));
  return mth(chunks, 0, chunks.size());
}

// A shard of n uint16 tokens: token j of shard s is (s * 7919 + j * 31) mod 50257.
Bytes u16_shard(uint64_t n, uint64_t s) {
  Bytes b;
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t t = (s * 7919 + j * 31) % 50257;
    b.push_back(static_cast<uint8_t>(t));
    b.push_back(static_cast<uint8_t>(t >> 8));
  }
  return b;
}

struct Fixture {
  std::vector<Bytes> shards;
  StreamDataset d;
};

// GPT-style: x = tokens [0, W-1), y = tokens [1, W). Shards of 9000 and
// 2100 tokens: 18000 and 4200 bytes, so windows cross the 4096-byte chunk
// boundaries and the shards' short last chunks.
Fixture gpt(uint32_t window = 65) {
  Fixture f;
  f.shards = {u16_shard(9000, 0), u16_shard(2100, 1)};
  f.d.token_dtype = hash::DType::kU16;
  f.d.output_dtype = hash::DType::kI64;
  f.d.window = window;
  f.d.views = {{"x", 0, window - 1}, {"y", 1, window - 1}};
  for (const Bytes &s : f.shards) f.d.shards.push_back({s.size() / 2, shard_root(s, 2)});
  return f;
}

}  // namespace

TEST(Stream, ShardRootIsTheRfc6962RootOverItsChunks) {
  for (uint64_t n : {1, 2047, 2048, 2049, 4096, 9000, 20000}) {
    const Bytes s = u16_shard(n, n);
    EXPECT_EQ(shard_root(s, 2), reference_shard_root(s)) << n;
  }
  EXPECT_EQ(status_of([] { shard_root(Bytes{}, 2); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { shard_root(Bytes(3), 2); }), Status::kInvalidArgument);
}

TEST(Stream, SizeAndLocateCountWindowsShardByShard) {
  const Fixture f = gpt();
  EXPECT_EQ(f.d.size(), (9000 - 64) + (2100 - 64));
  EXPECT_EQ(f.d.locate(0), (std::pair<uint32_t, uint64_t>{0, 0}));
  EXPECT_EQ(f.d.locate(8935), (std::pair<uint32_t, uint64_t>{0, 8935}));
  EXPECT_EQ(f.d.locate(8936), (std::pair<uint32_t, uint64_t>{1, 0}));
  EXPECT_EQ(f.d.locate(f.d.size() - 1), (std::pair<uint32_t, uint64_t>{1, 2100 - 65}));
  EXPECT_EQ(status_of([&] { f.d.locate(f.d.size()); }), Status::kOutOfRange);
}

TEST(Stream, EveryWindowProvesItsTokens) {
  const Fixture f = gpt();
  for (uint64_t i = 0; i < f.d.size(); i += 7) {
    const auto [s, o] = f.d.locate(i);
    const WindowProof p = prove_window(f.d, i, f.shards[s]);
    const WindowProof back = WindowProof::decode(p.encode());
    const Bytes w = check_window(f.d, i, back);
    ASSERT_EQ(w, Bytes(f.shards[s].begin() + static_cast<long>(o * 2),
                       f.shards[s].begin() + static_cast<long>((o + 65) * 2)))
        << i;
    // At most two 4096-byte chunks for a 130-byte window.
    EXPECT_LE(p.chunks.size(), 2u * kStreamChunkSize);
  }
}

TEST(Stream, AWindowGivesItsViewsAsTensors) {
  const Fixture f = gpt();
  const uint64_t i = 2040;  // tokens 2040..2104 of shard 0: bytes across the first chunk boundary
  const Bytes w = check_window(f.d, i, prove_window(f.d, i, f.shards[0]));
  const Bytes sample = window_sample(f.d, w);
  auto file = hash::SafetensorsFile::from_bytes(sample);
  ASSERT_EQ(file->size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const hash::StEntry &e = file->entry(k);
    EXPECT_EQ(e.meta.name, k == 0 ? "x" : "y");
    EXPECT_EQ(e.meta.dtype, hash::DType::kI64);
    EXPECT_EQ(e.meta.shape, std::vector<uint64_t>{64});
    const ByteView data = file->data(k);
    for (uint64_t j = 0; j < 64; ++j)
      ASSERT_EQ(get_u64le(data.data() + 8 * j), (2040 + j + k) * 31 % 50257) << k << " " << j;
  }
}

TEST(Stream, AForgedOrMalformedProofIsRefused) {
  const Fixture f = gpt();
  const uint64_t i = 5000;
  const WindowProof good = prove_window(f.d, i, f.shards[0]);
  WindowProof p = good;
  p.chunks[10] ^= 1;  // another token in the covered chunk
  EXPECT_EQ(status_of([&] { check_window(f.d, i, p); }), Status::kProofMismatch);
  p = good;
  p.hashes[0].bytes[0] ^= 1;
  EXPECT_EQ(status_of([&] { check_window(f.d, i, p); }), Status::kProofMismatch);
  p = good;
  p.hashes.pop_back();
  EXPECT_EQ(status_of([&] { check_window(f.d, i, p); }), Status::kProofLength);
  p = good;
  p.chunks.push_back(0);
  EXPECT_EQ(status_of([&] { check_window(f.d, i, p); }), Status::kProofLength);
  // Another window's proof, relabelled: its chunks are not this window's.
  p = prove_window(f.d, 100, f.shards[0]);
  EXPECT_EQ(status_of([&] { check_window(f.d, i, p); }), Status::kInvalidArgument);
  p.index = i;
  EXPECT_NE(status_of([&] { check_window(f.d, i, p); }), Status::kOk);
  // The window of another dataset: the same tokens under another shard root.
  Fixture other = gpt();
  other.d.shards[0].root.bytes[0] ^= 1;
  EXPECT_EQ(status_of([&] { check_window(other.d, i, good); }), Status::kProofMismatch);
  const Bytes enc = good.encode();
  EXPECT_EQ(status_of([&] { WindowProof::decode(ByteView(enc).first(enc.size() - 1)); }), Status::kMalformed);
  Bytes v2 = enc;
  v2[0] = 2;
  EXPECT_EQ(status_of([&] { WindowProof::decode(v2); }), Status::kUnsupported);
}

TEST(Stream, DescriptorRoundTripsAndEveryRuleIsNamed) {
  const Fixture f = gpt();
  const Bytes enc = f.d.encode();
  EXPECT_EQ(StreamDataset::decode(enc), f.d);
  EXPECT_EQ(f.d.root(), StreamDataset::decode(enc).root());
  Bytes extra = enc;
  extra.push_back(0);
  EXPECT_EQ(status_of([&] { StreamDataset::decode(extra); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { StreamDataset::decode(ByteView(enc).first(enc.size() - 1)); }), Status::kMalformed);
  Bytes v2 = enc;
  v2[0] = 2;
  EXPECT_EQ(status_of([&] { StreamDataset::decode(v2); }), Status::kUnsupported);
  // A count that promises more shards than the bytes hold is refused
  // before anything is allocated.
  Bytes many = enc;
  const size_t at = enc.size() - 2 * 40 - 4;
  many[at] = 0xff;
  many[at + 1] = 0xff;
  many[at + 2] = 0x0f;
  EXPECT_EQ(status_of([&] { StreamDataset::decode(many); }), Status::kMalformed);

  auto rule = [&](auto change) {
    StreamDataset d = f.d;
    change(d);
    return status_of([&] { d.validate(); });
  };
  EXPECT_EQ(rule([](StreamDataset &d) { d.token_dtype = hash::DType::kF32; }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.output_dtype = hash::DType::kF32; }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.window = 1; }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.window = kMaxWindow + 1; }), Status::kLimit);
  EXPECT_EQ(rule([](StreamDataset &d) { d.views.clear(); }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.views[1].start = 2; }), Status::kInvalidArgument);  // past W
  EXPECT_EQ(rule([](StreamDataset &d) { std::swap(d.views[0], d.views[1]); }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.views[1].name = "x"; }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.views[0].length = 0; }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.shards.clear(); }), Status::kInvalidArgument);
  EXPECT_EQ(rule([](StreamDataset &d) { d.shards[0].tokens = 0; }), Status::kInvalidArgument);
  // A window whose sample would exceed a sample's bound (16 views of a
  // 2^20-token window as I64: 128 MiB); 8 such views (64 MiB) are allowed.
  auto huge = [](size_t n) {
    return [n](StreamDataset &d) {
      d.window = kMaxWindow;
      d.views.clear();
      for (size_t i = 0; i < n; ++i) {
        std::string name = "v00";  // v00, v01, ...: increasing
        name[1] = static_cast<char>('0' + i / 10);
        name[2] = static_cast<char>('0' + i % 10);
        d.views.push_back({name, 0, kMaxWindow});
      }
      for (StreamShard &s : d.shards) s.tokens = kMaxWindow + 5;
    };
  };
  EXPECT_EQ(rule(huge(16)), Status::kLimit);
  EXPECT_EQ(rule(huge(9)), Status::kLimit);
  EXPECT_EQ(rule(huge(8)), Status::kOk);
  // Shards too short for one window: an empty dataset.
  EXPECT_EQ(rule([](StreamDataset &d) {
              for (StreamShard &s : d.shards) s.tokens = 10;
            }),
            Status::kInvalidArgument);
  // The root names everything: another window length, view or shard gives another root.
  for (auto change : std::vector<std::function<void(StreamDataset &)>>{
           [](StreamDataset &d) { d.window = 66; }, [](StreamDataset &d) { d.views[0].name = "idx"; },
           [](StreamDataset &d) { d.shards[1].tokens = 2099; }, [](StreamDataset &d) { std::swap(d.shards[0], d.shards[1]); },
           [](StreamDataset &d) { d.output_dtype = hash::DType::kI32; }}) {
    StreamDataset d = f.d;
    change(d);
    EXPECT_NE(d.root(), f.d.root());
  }
}

TEST(Stream, U32TokensAndI32Outputs) {
  Bytes shard;
  for (uint32_t j = 0; j < 3000; ++j) put_u32le(shard, j == 1500 ? 0x80000000u : j * 100003u % 200000u);
  StreamDataset d;
  d.token_dtype = hash::DType::kU32;
  d.output_dtype = hash::DType::kI32;
  d.window = 9;
  d.views = {{"tokens", 0, 9}};
  d.shards = {{3000, shard_root(shard, 4)}};
  const Bytes w = check_window(d, 10, prove_window(d, 10, shard));
  auto file = hash::SafetensorsFile::from_bytes(window_sample(d, w));
  EXPECT_EQ(get_u32le(file->data(0).data() + 4), 11u * 100003u % 200000u);
  // A token that I32 cannot hold is refused, not wrapped.
  const Bytes big = check_window(d, 1495, prove_window(d, 1495, shard));
  EXPECT_EQ(status_of([&] { window_sample(d, big); }), Status::kInvalidArgument);
}

TEST(Stream, ShardFilesGiveTheSameRootsAndProofs) {
  const Fixture f = gpt();
  test::TempDir dir;
  for (size_t s = 0; s < 2; ++s) {
    const std::string path = dir.file("shard" + std::to_string(s) + ".bin");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(f.shards[s].data()), static_cast<std::streamsize>(f.shards[s].size()));
    const auto [root, tokens] = shard_root_file(path, 2);
    EXPECT_EQ(root, f.d.shards[s].root);
    EXPECT_EQ(tokens, f.d.shards[s].tokens);
  }
  for (uint64_t i : {uint64_t{0}, uint64_t{2040}, uint64_t{8935}, uint64_t{8936}, f.d.size() - 1}) {
    const auto [s, o] = f.d.locate(i);
    const WindowProof p = prove_window_file(f.d, i, dir.file("shard" + std::to_string(s) + ".bin"));
    EXPECT_EQ(p.encode(), prove_window(f.d, i, f.shards[s]).encode()) << i;
    EXPECT_EQ(check_window(f.d, i, p).size(), 65u * 2);
  }
  EXPECT_EQ(status_of([&] { prove_window_file(f.d, 0, dir.file("shard1.bin")); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { prove_window_file(f.d, 0, dir.file("missing.bin")); }), Status::kIo);
  EXPECT_EQ(status_of([&] { shard_root_file(dir.file("missing.bin"), 2); }), Status::kIo);
  std::ofstream(dir.file("odd.bin"), std::ios::binary).write("abc", 3);
  EXPECT_EQ(status_of([&] { shard_root_file(dir.file("odd.bin"), 2); }), Status::kInvalidArgument);
  std::ofstream(dir.file("empty.bin"), std::ios::binary);
  EXPECT_EQ(status_of([&] { shard_root_file(dir.file("empty.bin"), 2); }), Status::kInvalidArgument);
}
