// Token-stream datasets through the C API (docs/PROTOCOL.md 15.1): a
// dataset of two token files described in JSON, its root and size, every
// window proven from the files and checked into its sample, and what a
// verifier refuses: a forged chunk, a short proof, another window's proof,
// a descriptor with an unknown key or a bad dtype.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "pot.h"
#include "capi_test_util.h"
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

// Writes train0.bin (5000 tokens) and train1.bin (3000) into dir and
// returns the descriptor of windows of 129 tokens over them.
nlohmann::json two_shards(const pot::test::TempDir &dir) {
  const std::vector<std::vector<uint8_t>> data = {tokens(5000, 1), tokens(3000, 2)};
  nlohmann::json shards = nlohmann::json::array();
  for (size_t s = 0; s < data.size(); ++s) {
    const std::string path = dir.file("train" + std::to_string(s) + ".bin");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(data[s].data()), static_cast<std::streamsize>(data[s].size()));
    pot_digest root;
    uint64_t n = 0;
    EXPECT_EQ(pot_stream_shard_root_file(&root, &n, path.c_str(), POT_DTYPE_U16, nullptr), POT_OK);
    EXPECT_EQ(n, data[s].size() / 2);
    shards.push_back({{"tokens", n}, {"root", hex_of(root)}});
  }
  return {{"token_dtype", "U16"}, {"output_dtype", "I64"}, {"window", 129},
          {"views", {{{"name", "x"}, {"start", 0}, {"length", 128}}, {{"name", "y"}, {"start", 1}, {"length", 128}}}},
          {"shards", shards}};
}

void write_tensor(const std::string &path, const float *v, uint64_t n) {
  pot_safetensors_writer *w = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(w, "param/w", POT_DTYPE_F32, &n, 1, v, n * sizeof(float), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_write(w, path.c_str(), nullptr), POT_OK);
  pot_safetensors_writer_free(w);
}

}  // namespace

TEST(CApiStream, TokenFilesCommitAndEveryWindowProvesItsSample) {
  pot::test::TempDir dir;
  const nlohmann::json j = two_shards(dir);
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
    // What a trainer reads from the file is the proven sample.
    Bytes read;
    ASSERT_EQ(pot_stream_sample(&read.b, s, i, path.c_str(), nullptr), POT_OK);
    EXPECT_EQ(read.vec(), sample.vec());
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

// A one-step run on a stream dataset, opened through pot.h
// (pot_opening_set_stream, pot_opening_add_window) and verified; a window
// served as a payload of the miner's choosing is refused.
TEST(CApiStream, OpeningsCarryWindowProofs) {
  pot::test::TempDir dir;
  pot_stream *s = nullptr;
  ASSERT_EQ(pot_stream_from_json(&s, two_shards(dir).dump().c_str(), nullptr), POT_OK);
  const uint64_t size = pot_stream_size(s);
  pot_digest droot;
  ASSERT_EQ(pot_stream_root(&droot, s, nullptr), POT_OK);
  Bytes descriptor, entry;
  ASSERT_EQ(pot_stream_encode(&descriptor.b, s, nullptr), POT_OK);
  ASSERT_EQ(pot_seeded_schedule_entry(&entry.b, 9, size, 3, 1, 1, nullptr), POT_OK);
  pot_tree *schedule = nullptr, *log = nullptr;
  ASSERT_EQ(pot_tree_open(&schedule, nullptr, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_open(&log, nullptr, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_append(nullptr, schedule, entry.b.data, entry.b.len, nullptr), POT_OK);
  const float w0[2] = {1, 2}, w1[2] = {0.5f, 1};
  write_tensor(dir.file("s0"), w0, 2);
  write_tensor(dir.file("s1"), w1, 2);
  pot_digest d0, d1, sroot, lroot, run_id;
  ASSERT_EQ(pot_safetensors_digest_file(&d0, dir.file("s0").c_str(), 1, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_digest_file(&d1, dir.file("s1").c_str(), 1, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_root(&sroot, schedule, 1, nullptr), POT_OK);
  const nlohmann::json cj = {{"task_id", std::string(64, '7')}, {"initial_state_digest", hex_of(d0)},
                             {"schedule_root", hex_of(sroot)},  {"dataset_root", hex_of(droot)},
                             {"dataset_size", size},            {"spec_digest", std::string(64, '0')},
                             {"declared_steps", 1},             {"miner_identity", "01"}};
  pot_commitment *c = nullptr;
  ASSERT_EQ(pot_commitment_from_json(&c, cj.dump().c_str(), nullptr), POT_OK);
  ASSERT_EQ(pot_commitment_run_id(&run_id, c, nullptr), POT_OK);
  pot_safetensors *a = nullptr, *b = nullptr;
  ASSERT_EQ(pot_safetensors_open(&a, dir.file("s0").c_str(), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_open(&b, dir.file("s1").c_str(), nullptr), POT_OK);
  double norm = 0;
  ASSERT_EQ(pot_update_norm(&norm, a, b, "param/", nullptr), POT_OK);
  const pot_digest stats = pot::test::stats_digest_of(b);
  const std::vector<std::vector<uint8_t>> tables{pot::test::table_of(b)};
  pot_safetensors_free(a);
  pot_safetensors_free(b);
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  ASSERT_EQ(pot_step_leaf_encode(leaf, &run_id, 1, &d1, &stats, 0.5, norm, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_append(nullptr, log, leaf, sizeof leaf, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_root(&lroot, log, 1, nullptr), POT_OK);

  uint64_t idx[3];
  uint32_t micro[1];
  size_t n = 3, m = 1;
  ASSERT_EQ(pot_schedule_entry_decode(nullptr, idx, &n, micro, &m, entry.b.data, entry.b.len, nullptr), POT_OK);
  // payloads: true serves the windows' samples as payloads (the miner's
  // choice of bytes), false their window proofs.
  auto open = [&](bool payloads) {
    pot_opening *o = nullptr;
    EXPECT_EQ(pot_opening_new(&o, &run_id, 1, 1, &d0, nullptr), POT_OK);
    Bytes lp, sp, manifest;
    EXPECT_EQ(pot_tree_inclusion_proof(&lp.b, log, 0, 1, nullptr), POT_OK);
    EXPECT_EQ(pot_tree_inclusion_proof(&sp.b, schedule, 0, 1, nullptr), POT_OK);
    EXPECT_EQ(pot_opening_set_post_leaf(o, leaf, sizeof leaf, lp.b.data, lp.b.len, nullptr), POT_OK);
    EXPECT_EQ(pot_opening_set_schedule(o, entry.b.data, entry.b.len, sp.b.data, sp.b.len, nullptr), POT_OK);
    EXPECT_EQ(pot_opening_set_stream(o, descriptor.b.data, descriptor.b.len, nullptr), POT_OK);
    for (size_t i = 0; i < n; ++i) {
      uint32_t shard = 0;
      uint64_t offset = 0;
      EXPECT_EQ(pot_stream_locate(&shard, &offset, s, idx[i], nullptr), POT_OK);
      const std::string path = dir.file("train" + std::to_string(shard) + ".bin");
      Bytes item;
      if (payloads) {
        EXPECT_EQ(pot_stream_sample(&item.b, s, idx[i], path.c_str(), nullptr), POT_OK);
        EXPECT_EQ(pot_opening_add_sample(o, idx[i], item.b.data, item.b.len, nullptr, 0, nullptr), POT_OK);
      } else {
        EXPECT_EQ(pot_stream_prove_window(&item.b, s, idx[i], path.c_str(), nullptr), POT_OK);
        EXPECT_EQ(pot_opening_add_window(o, idx[i], item.b.data, item.b.len, nullptr), POT_OK);
      }
    }
    const std::vector<std::array<uint8_t, POT_STEP_LEAF_SIZE>> leaves{std::to_array(leaf)};
    EXPECT_EQ(pot::test::set_run_record(o, leaves, tables, {}), "[]");
    EXPECT_EQ(pot_opening_encode(&manifest.b, o, nullptr), POT_OK);
    pot_opening_free(o);
    return manifest.vec();
  };
  const std::vector<uint8_t> good = open(false), bad = open(true);
  pot_opening_check check = POT_CHECK_MANIFEST;
  const std::string s0 = dir.file("s0"), s1 = dir.file("s1");
  pot_error *err = nullptr;
  EXPECT_EQ(pot_opening_verify(&check, c, 1, 1, &lroot, good.data(), good.size(), s0.c_str(), s1.c_str(), 1, &err),
            POT_OK)
      << (err ? pot_error_message(err) : "");
  EXPECT_EQ(check, POT_CHECK_OK);
  EXPECT_EQ(pot_opening_verify(&check, c, 1, 1, &lroot, bad.data(), bad.size(), s0.c_str(), s1.c_str(), 1, &err),
            POT_E_MALFORMED);
  EXPECT_EQ(check, POT_CHECK_SAMPLE_PAYLOAD);
  EXPECT_NE(std::string(pot_error_message(err)).find("window proof only"), std::string::npos) << pot_error_message(err);
  pot_error_free(err);
  pot_commitment_free(c);
  pot_tree_free(schedule);
  pot_tree_free(log);
  pot_stream_free(s);
}
