// Token-stream datasets through the C API (docs/PROTOCOL.md 15.1): a
// dataset of two token files described in JSON, its root and size, every
// window proven from the files and checked into its sample, and what a
// verifier refuses: a forged chunk, a short proof, another window's proof,
// a descriptor with an unknown key or a bad dtype.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "pot.h"
#include "test_util.h"

namespace {

struct Bytes {
  pot_bytes b{nullptr, 0};
  ~Bytes() { pot_bytes_free(&b); }
  std::vector<uint8_t> vec() const { return {b.data, b.data + b.len}; }
};

std::string hex_of(const pot_digest &d) {
  char buf[65];
  EXPECT_EQ(pot_digest_to_hex(buf, &d, nullptr), POT_OK);
  return buf;
}

// n uint16 tokens: token j is (seed + 31 j) mod 50257.
std::vector<uint8_t> tokens(uint64_t n, uint64_t seed) {
  std::vector<uint8_t> b;
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t t = (seed + 31 * j) % 50257;
    b.push_back(static_cast<uint8_t>(t));
    b.push_back(static_cast<uint8_t>(t >> 8));
  }
  return b;
}

}  // namespace

TEST(CApiStream, TokenFilesCommitAndEveryWindowProvesItsSample) {
  pot::test::TempDir dir;
  const std::vector<std::vector<uint8_t>> data = {tokens(5000, 1), tokens(3000, 2)};
  nlohmann::json shards = nlohmann::json::array();
  for (size_t s = 0; s < data.size(); ++s) {
    const std::string path = dir.file("train" + std::to_string(s) + ".bin");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(data[s].data()), static_cast<std::streamsize>(data[s].size()));
    pot_digest root;
    uint64_t n = 0;
    ASSERT_EQ(pot_stream_shard_root_file(&root, &n, path.c_str(), POT_DTYPE_U16, nullptr), POT_OK);
    EXPECT_EQ(n, data[s].size() / 2);
    shards.push_back({{"tokens", n}, {"root", hex_of(root)}});
  }
  const nlohmann::json j = {{"token_dtype", "U16"}, {"output_dtype", "I64"}, {"window", 129},
                            {"views", {{{"name", "x"}, {"start", 0}, {"length", 128}},
                                       {{"name", "y"}, {"start", 1}, {"length", 128}}}},
                            {"shards", shards}};
  pot_stream *s = nullptr;
  ASSERT_EQ(pot_stream_from_json(&s, j.dump().c_str(), nullptr), POT_OK);
  EXPECT_EQ(pot_stream_size(s), (5000u - 128) + (3000u - 128));
  // Encode, decode, JSON again: one dataset, one root.
  Bytes enc, js;
  ASSERT_EQ(pot_stream_encode(&enc.b, s, nullptr), POT_OK);
  pot_stream *back = nullptr;
  ASSERT_EQ(pot_stream_decode(&back, enc.b.data, enc.b.len, nullptr), POT_OK);
  ASSERT_EQ(pot_stream_to_json(&js.b, back, nullptr), POT_OK);
  EXPECT_EQ(nlohmann::json::parse(reinterpret_cast<const char *>(js.b.data)), j);
  pot_digest r1, r2;
  ASSERT_EQ(pot_stream_root(&r1, s, nullptr), POT_OK);
  ASSERT_EQ(pot_stream_root(&r2, back, nullptr), POT_OK);
  EXPECT_EQ(hex_of(r1), hex_of(r2));
  pot_stream_free(back);

  for (uint64_t i : {uint64_t{0}, uint64_t{1000}, uint64_t{4871}, uint64_t{4872}, pot_stream_size(s) - 1}) {
    uint32_t shard = 0;
    uint64_t offset = 0;
    ASSERT_EQ(pot_stream_locate(&shard, &offset, s, i, nullptr), POT_OK);
    Bytes proof, sample;
    const std::string path = dir.file("train" + std::to_string(shard) + ".bin");
    ASSERT_EQ(pot_stream_prove_window(&proof.b, s, i, path.c_str(), nullptr), POT_OK);
    ASSERT_EQ(pot_stream_check_window(&sample.b, s, i, proof.b.data, proof.b.len, nullptr), POT_OK) << i;
    // The sample's y is x shifted by one token: tokens offset+1.. of the shard.
    pot_safetensors *st = nullptr;
    const std::string sp = dir.file("sample.safetensors");
    std::ofstream(sp, std::ios::binary)
        .write(reinterpret_cast<const char *>(sample.b.data), static_cast<std::streamsize>(sample.b.len));
    ASSERT_EQ(pot_safetensors_open(&st, sp.c_str(), nullptr), POT_OK);
    const char *name = nullptr;
    const void *ydata = nullptr;
    size_t nbytes = 0;
    ASSERT_EQ(pot_safetensors_tensor(&name, nullptr, nullptr, nullptr, &ydata, &nbytes, st, 1, nullptr), POT_OK);
    EXPECT_STREQ(name, "y");
    EXPECT_EQ(nbytes, 128u * 8);
    int64_t first = 0;
    std::memcpy(&first, ydata, 8);
    EXPECT_EQ(first, static_cast<int64_t>((shard + 1 + 31 * (offset + 1)) % 50257));
    pot_safetensors_free(st);

    // A forged token in the proof's chunks, a short proof, another window's proof.
    std::vector<uint8_t> forged = proof.vec();
    forged[30] ^= 1;
    Bytes out;
    pot_error *err = nullptr;
    EXPECT_EQ(pot_stream_check_window(&out.b, s, i, forged.data(), forged.size(), &err), POT_E_PROOF_MISMATCH);
    pot_error_free(err);
    EXPECT_EQ(pot_stream_check_window(&out.b, s, i, proof.b.data, proof.b.len - 32, nullptr), POT_E_MALFORMED);
    EXPECT_NE(pot_stream_check_window(&out.b, s, i == 0 ? 1 : 0, proof.b.data, proof.b.len, nullptr), POT_OK);
  }
  pot_error *err = nullptr;
  uint32_t shard;
  uint64_t offset;
  EXPECT_EQ(pot_stream_locate(&shard, &offset, s, pot_stream_size(s), &err), POT_E_OUT_OF_RANGE);
  pot_error_free(err);
  pot_stream_free(s);

  // Descriptors a decoder refuses, naming the rule.
  for (const auto &[change, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"extra", 1}}, "extra"},
           {{{"token_dtype", "F32"}}, "token_dtype"},
           {{{"token_dtype", "Q8"}}, "not a dtype name"},
           {{{"window", 1}}, "window"}}) {
    nlohmann::json bad = j;
    bad.update(change);
    pot_stream *b = nullptr;
    err = nullptr;
    EXPECT_EQ(pot_stream_from_json(&b, bad.dump().c_str(), &err), POT_E_INVALID_ARGUMENT) << change;
    EXPECT_NE(std::string(pot_error_message(err)).find(want), std::string::npos) << pot_error_message(err);
    pot_error_free(err);
  }
}
