// The C API of the real shared library: the error contract (status, owned
// error with message, outputs untouched on failure, NULL handling), versions,
// and each feature end to end through pot.h only.
#include <gtest/gtest.h>

#include <cstring>
#include <atomic>
#include <thread>

#include "pot.h"
#include "test_util.h"

using nlohmann::json;

namespace {

struct Err {
  pot_error *e = nullptr;
  ~Err() { pot_error_free(e); }
  pot_error **operator&() {
    pot_error_free(e);
    e = nullptr;
    return &e;
  }
  std::string message() const { return e ? pot_error_message(e) : ""; }
  pot_status code() const { return pot_error_code(e); }
};

pot_digest digest_hex(const std::string &h) {
  pot_digest d;
  EXPECT_EQ(pot_digest_from_hex(&d, h.c_str(), nullptr), POT_OK) << h;
  return d;
}

std::string hex_of(const pot_digest &d) {
  char buf[65];
  EXPECT_EQ(pot_digest_to_hex(buf, &d, nullptr), POT_OK);
  return buf;
}

}  // namespace

TEST(CApi, VersionsAndConstants) {
  EXPECT_STREQ(pot_version_string(), POT_VERSION_STRING);
  EXPECT_EQ(pot_abi_version(), static_cast<uint32_t>(POT_ABI_VERSION));
  EXPECT_EQ(pot_digest_size(), 32u);
  EXPECT_EQ(pot_chunk_size(), static_cast<uint32_t>(POT_CHUNK_SIZE));
  EXPECT_EQ(pot_max_name_bytes(), static_cast<size_t>(POT_MAX_NAME_BYTES));
  EXPECT_EQ(pot_max_dims(), static_cast<size_t>(POT_MAX_DIMS));
  EXPECT_STREQ(pot_status_name(POT_E_PROOF_MISMATCH), "POT_E_PROOF_MISMATCH");
  EXPECT_STREQ(pot_status_name(static_cast<pot_status>(999)), "POT_E_UNKNOWN");
}

TEST(CApi, ErrorsCarryCodeAndMessageAndLeaveOutputsUntouched) {
  Err err;
  pot_digest out;
  std::memset(&out, 0xAB, sizeof out);
  EXPECT_EQ(pot_digest_from_hex(&out, "zz", &err), POT_E_MALFORMED);
  EXPECT_EQ(err.code(), POT_E_MALFORMED);
  EXPECT_NE(err.message().find("64 hex"), std::string::npos) << err.message();
  for (uint8_t b : out.bytes) EXPECT_EQ(b, 0xAB);
  // err may be NULL: the status alone is returned.
  EXPECT_EQ(pot_digest_from_hex(&out, "zz", nullptr), POT_E_MALFORMED);
  // NULL arguments are named.
  EXPECT_EQ(pot_digest_from_hex(nullptr, std::string(64, '0').c_str(), &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(err.message().find("'out'"), std::string::npos) << err.message();
  EXPECT_EQ(pot_sha256(&out, nullptr, 5, &err), POT_E_INVALID_ARGUMENT);
  // A NULL out-parameter of a constructor allocates nothing (ASan checks).
  EXPECT_EQ(pot_state_new(nullptr, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_log_new(nullptr, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_tree_open(nullptr, nullptr, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_safetensors_writer_new(nullptr, &err), POT_E_INVALID_ARGUMENT);
  // (Enum arguments that are negative are tested from C: tests/header.)
  // Free functions accept NULL.
  pot_error_free(nullptr);
  pot_bytes_free(nullptr);
  pot_state_free(nullptr);
  pot_log_free(nullptr);
  pot_tree_free(nullptr);
  pot_safetensors_free(nullptr);
  pot_safetensors_writer_free(nullptr);
  pot_tensor_assembler_free(nullptr);
  EXPECT_EQ(pot_error_code(nullptr), POT_E_INVALID_ARGUMENT);
}

TEST(CApi, Sha256KnownAnswers) {
  pot_digest d;
  ASSERT_EQ(pot_sha256(&d, "abc", 3, nullptr), POT_OK);
  EXPECT_EQ(hex_of(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ASSERT_EQ(pot_sha256(&d, nullptr, 0, nullptr), POT_OK);
  EXPECT_EQ(hex_of(d), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CApi, Rfc6962VectorsThroughTheCApi) {
  const json v = pot::test::load_vectors("rfc6962.json");
  pot_tree *tree = nullptr;
  ASSERT_EQ(pot_tree_open(&tree, nullptr, nullptr), POT_OK);
  pot_log *log = nullptr;
  ASSERT_EQ(pot_log_new(&log, nullptr), POT_OK);
  for (const json &l : v["leaf_inputs"]) {
    const auto b = pot::test::unhex(l["hex"]);
    uint64_t index = 99;
    ASSERT_EQ(pot_tree_append(&index, tree, b.data(), b.size(), nullptr), POT_OK);
    EXPECT_EQ(index, l["index"].get<uint64_t>());
    ASSERT_EQ(pot_log_append(log, b.data(), b.size(), nullptr), POT_OK);
  }
  EXPECT_EQ(pot_log_size(log), 8u);
  pot_digest root;
  ASSERT_EQ(pot_log_root(&root, log, nullptr), POT_OK);
  for (const json &r : v["roots"]) {
    ASSERT_EQ(pot_tree_root(&root, tree, r["tree_size"], nullptr), POT_OK);
    EXPECT_EQ(hex_of(root), r["hex"]);
  }
  for (const json &p : v["inclusion_proofs"]) {
    pot_bytes proof{};
    ASSERT_EQ(pot_tree_inclusion_proof(&proof, tree, p["leaf_index"], p["tree_size"], nullptr), POT_OK);
    std::string joined;
    for (const json &h : p["proof"]) joined += h.get<std::string>();
    EXPECT_EQ(pot::test::hex(proof.data, proof.len), joined);
    pot_digest leaf;
    const auto input = pot::test::unhex(p["leaf_input_hex"]);
    ASSERT_EQ(pot_merkle_leaf_hash(&leaf, input.data(), input.size(), nullptr), POT_OK);
    const pot_digest r = digest_hex(p["root"]);
    EXPECT_EQ(pot_merkle_verify_inclusion(p["leaf_index"], p["tree_size"], &leaf, proof.data, proof.len, &r, nullptr), POT_OK);
    pot_bytes_free(&proof);
    EXPECT_EQ(proof.data, nullptr);
  }
  for (const json &p : v["consistency_proofs"]) {
    pot_bytes proof{};
    ASSERT_EQ(pot_tree_consistency_proof(&proof, tree, p["size1"], p["size2"], nullptr), POT_OK);
    const pot_digest r1 = digest_hex(p["root1"]), r2 = digest_hex(p["root2"]);
    EXPECT_EQ(pot_merkle_verify_consistency(p["size1"], p["size2"], &r1, &r2, proof.data, proof.len, nullptr), POT_OK);
    pot_bytes_free(&proof);
  }
  // The verifier probes whose every hash is 32 bytes. The others cannot be
  // expressed through pot.h: roots and leaf hashes are pot_digest, and a
  // proof is concatenated 32-byte hashes, so an empty "garbage" element does
  // not exist on the wire. The C++ test runs all 196 through the merkle layer.
  size_t run = 0;
  auto fits = [](const json &p, std::initializer_list<const char *> keys) {
    for (const char *k : keys) if (p[k].get<std::string>().size() != 64) return false;
    for (const json &h : p["proof"]) if (h.get<std::string>().size() != 64) return false;
    return true;
  };
  for (const json &p : v["verifier_probes"]["inclusion"]) {
    if (!fits(p, {"leaf_hash", "root"})) continue;
    std::vector<uint8_t> proof;
    for (const json &h : p["proof"]) for (uint8_t b : pot::test::unhex(h)) proof.push_back(b);
    const pot_digest leaf = digest_hex(p["leaf_hash"]), r = digest_hex(p["root"]);
    Err err;
    const pot_status s = pot_merkle_verify_inclusion(p["leaf_index"], p["tree_size"], &leaf, proof.data(), proof.size(), &r, &err);
    EXPECT_EQ(s != POT_OK, p["want_error"].get<bool>()) << p["source"];
    if (s != POT_OK) {
      EXPECT_EQ(err.code(), s);
    }
    ++run;
  }
  for (const json &p : v["verifier_probes"]["consistency"]) {
    if (!fits(p, {"root1", "root2"})) continue;
    std::vector<uint8_t> proof;
    for (const json &h : p["proof"]) for (uint8_t b : pot::test::unhex(h)) proof.push_back(b);
    const pot_digest r1 = digest_hex(p["root1"]), r2 = digest_hex(p["root2"]);
    const pot_status s = pot_merkle_verify_consistency(p["size1"], p["size2"], &r1, &r2, proof.data(), proof.size(), nullptr);
    EXPECT_EQ(s != POT_OK, p["want_error"].get<bool>()) << p["source"];
    ++run;
  }
  EXPECT_EQ(run, 143u);  // 196 probes, 53 with a hash of another length
  pot_log_free(log);
  pot_tree_free(tree);
}

TEST(CApi, ProofErrorsAreDistinct) {
  pot_tree *tree = nullptr;
  ASSERT_EQ(pot_tree_open(&tree, nullptr, nullptr), POT_OK);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(pot_tree_append(nullptr, tree, &i, sizeof i, nullptr), POT_OK);
  pot_digest root, leaf;
  ASSERT_EQ(pot_tree_root(&root, tree, 10, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_leaf_hash(&leaf, tree, 3, nullptr), POT_OK);
  pot_bytes proof{};
  ASSERT_EQ(pot_tree_inclusion_proof(&proof, tree, 3, 10, nullptr), POT_OK);
  Err err;
  EXPECT_EQ(pot_merkle_verify_inclusion(3, 10, &leaf, proof.data, proof.len, &root, &err), POT_OK);
  EXPECT_EQ(pot_merkle_verify_inclusion(3, 10, &leaf, proof.data, proof.len - 32, &root, &err), POT_E_PROOF_LENGTH);
  EXPECT_EQ(pot_merkle_verify_inclusion(3, 10, &leaf, proof.data, proof.len - 1, &root, &err), POT_E_MALFORMED);
  EXPECT_EQ(pot_merkle_verify_inclusion(10, 10, &leaf, proof.data, proof.len, &root, &err), POT_E_OUT_OF_RANGE);
  proof.data[5] ^= 1;
  EXPECT_EQ(pot_merkle_verify_inclusion(3, 10, &leaf, proof.data, proof.len, &root, &err), POT_E_PROOF_MISMATCH);
  EXPECT_NE(err.message().find("root"), std::string::npos);
  pot_bytes untouched{reinterpret_cast<uint8_t *>(0x1), 7};
  EXPECT_EQ(pot_tree_inclusion_proof(&untouched, tree, 10, 10, &err), POT_E_OUT_OF_RANGE);
  EXPECT_EQ(untouched.len, 7u);
  EXPECT_EQ(pot_tree_consistency_proof(&untouched, tree, 0, 10, &err), POT_E_OUT_OF_RANGE);
  std::vector<uint8_t> huge(32 * 129);
  EXPECT_EQ(pot_merkle_verify_inclusion(3, 10, &leaf, huge.data(), huge.size(), &root, &err), POT_E_LIMIT);
  pot_bytes_free(&proof);
  pot_tree_free(tree);
}

TEST(CApi, LogSaveLoad) {
  pot_log *log = nullptr;
  ASSERT_EQ(pot_log_new(&log, nullptr), POT_OK);
  for (int i = 0; i < 13; ++i) ASSERT_EQ(pot_log_append(log, &i, sizeof i, nullptr), POT_OK);
  pot_bytes saved{};
  ASSERT_EQ(pot_log_save(&saved, log, nullptr), POT_OK);
  EXPECT_EQ(saved.len, 8u + 32u * 3);  // 13 = 8 + 4 + 1
  pot_log *back = nullptr;
  ASSERT_EQ(pot_log_load(&back, saved.data, saved.len, nullptr), POT_OK);
  pot_digest a, b;
  pot_log_root(&a, log, nullptr);
  pot_log_root(&b, back, nullptr);
  EXPECT_EQ(hex_of(a), hex_of(b));
  pot_log *none = nullptr;
  Err err;
  EXPECT_EQ(pot_log_load(&none, saved.data, saved.len - 1, &err), POT_E_MALFORMED);
  EXPECT_EQ(none, nullptr);
  pot_bytes_free(&saved);
  pot_log_free(log);
  pot_log_free(back);
}

TEST(CApi, StateSafetensorsAndShardsAgree) {
  pot::test::TempDir dir;
  const auto w = pot::test::pseudo_random_bytes(4 * 3 * POT_CHUNK_SIZE / 2, 5);
  const uint64_t wshape[2] = {3, POT_CHUNK_SIZE / 2};
  const float bias[3] = {0.5f, -1.0f, 2.0f};
  const uint64_t bshape[1] = {3};

  pot_state *state = nullptr;
  ASSERT_EQ(pot_state_new(&state, nullptr), POT_OK);
  ASSERT_EQ(pot_state_set_threads(state, 2, nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor(state, "w", POT_DTYPE_F32, wshape, 2, w.data(), w.size(), nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor(state, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, nullptr), POT_OK);
  Err err;
  EXPECT_EQ(pot_state_add_tensor(state, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, &err), POT_E_DUPLICATE);
  EXPECT_EQ(pot_state_add_tensor(state, "c", static_cast<pot_dtype>(77), bshape, 1, bias, sizeof bias, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_state_add_tensor(state, "c", POT_DTYPE_F64, bshape, 1, bias, sizeof bias, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_state_tensor_count(state), 2u);
  pot_digest from_state;
  ASSERT_EQ(pot_state_digest(&from_state, state, nullptr), POT_OK);
  pot_bytes untouched_bytes{nullptr, 0};

  pot_safetensors_writer *wr = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&wr, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(wr, "w", POT_DTYPE_F32, wshape, 2, w.data(), w.size(), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(wr, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, nullptr), POT_OK);
  EXPECT_EQ(pot_safetensors_writer_add(wr, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, &err), POT_E_DUPLICATE);
  ASSERT_EQ(pot_safetensors_writer_set_metadata(wr, "step", "7", nullptr), POT_OK);
  const std::string path = dir.file("s.safetensors");
  ASSERT_EQ(pot_safetensors_writer_write(wr, path.c_str(), nullptr), POT_OK);
  pot_bytes in_memory{nullptr, 0};
  ASSERT_EQ(pot_safetensors_writer_bytes(&in_memory, wr, nullptr), POT_OK);
  EXPECT_EQ(std::vector<uint8_t>(in_memory.data, in_memory.data + in_memory.len), pot::test::read_file(path));
  pot_bytes_free(&in_memory);
  EXPECT_EQ(pot_safetensors_writer_bytes(nullptr, wr, nullptr), POT_E_INVALID_ARGUMENT);
  pot_safetensors_writer_free(wr);

  pot_digest from_file;
  ASSERT_EQ(pot_safetensors_digest_file(&from_file, path.c_str(), 1, nullptr), POT_OK);
  EXPECT_EQ(hex_of(from_file), hex_of(from_state));
  pot_safetensors *f = nullptr;
  ASSERT_EQ(pot_safetensors_open(&f, path.c_str(), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_count(f), 2u);
  const char *name = nullptr;
  pot_dtype dtype;
  const uint64_t *shape = nullptr;
  size_t ndim = 0, nbytes = 0;
  const void *data = nullptr;
  ASSERT_EQ(pot_safetensors_tensor(&name, &dtype, &shape, &ndim, &data, &nbytes, f, 0, nullptr), POT_OK);
  EXPECT_STREQ(name, "b");
  EXPECT_EQ(dtype, POT_DTYPE_F32);
  EXPECT_EQ(ndim, 1u);
  EXPECT_EQ(shape[0], 3u);
  EXPECT_EQ(std::memcmp(data, bias, sizeof bias), 0);
  EXPECT_EQ(pot_safetensors_tensor(&name, nullptr, nullptr, nullptr, nullptr, nullptr, f, 2, &err), POT_E_OUT_OF_RANGE);
  size_t index = 9;
  EXPECT_EQ(pot_safetensors_find(&index, f, "w", nullptr), POT_OK);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(pot_safetensors_find(&index, f, "x", &err), POT_E_NOT_FOUND);
  const char *value = nullptr;
  EXPECT_EQ(pot_safetensors_metadata(&value, f, "step", nullptr), POT_OK);
  EXPECT_STREQ(value, "7");
  EXPECT_EQ(pot_safetensors_metadata(&value, f, "nope", &err), POT_E_NOT_FOUND);
  pot_safetensors_free(f);

  // Two ranks each hash half of "w"; the assembled digest joins the state.
  pot_digest whole, assembled;
  ASSERT_EQ(pot_tensor_digest(&whole, "w", POT_DTYPE_F32, wshape, 2, w.data(), w.size(), 0, nullptr), POT_OK);
  pot_tensor_assembler *as = nullptr;
  ASSERT_EQ(pot_tensor_assembler_new(&as, "w", POT_DTYPE_F32, wshape, 2, nullptr), POT_OK);
  const size_t half = POT_CHUNK_SIZE * 3;
  pot_bytes r1{}, r2{};
  ASSERT_EQ(pot_chunk_range_hash(&r1, w.data(), half, 0, w.size(), 1, nullptr), POT_OK);
  ASSERT_EQ(pot_chunk_range_hash(&r2, w.data() + half, w.size() - half, half, w.size(), 1, nullptr), POT_OK);
  EXPECT_EQ(pot_tensor_assembler_finish(&assembled, as, &err), POT_E_INVALID_ARGUMENT);
  ASSERT_EQ(pot_tensor_assembler_add(as, r2.data, r2.len, nullptr), POT_OK);
  ASSERT_EQ(pot_tensor_assembler_add(as, r1.data, r1.len, nullptr), POT_OK);
  ASSERT_EQ(pot_tensor_assembler_finish(&assembled, as, nullptr), POT_OK);
  EXPECT_EQ(hex_of(assembled), hex_of(whole));
  EXPECT_EQ(pot_tensor_assembler_add(as, r1.data, r1.len - 1, &err), POT_E_MALFORMED);
  pot_state *sharded = nullptr;
  ASSERT_EQ(pot_state_new(&sharded, nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor_digest(sharded, "w", &assembled, nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor(sharded, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, nullptr), POT_OK);
  pot_digest from_shards;
  ASSERT_EQ(pot_state_digest(&from_shards, sharded, nullptr), POT_OK);
  EXPECT_EQ(hex_of(from_shards), hex_of(from_state));
  // One tensor proven against the state digest alone.
  pot_bytes tp{};
  ASSERT_EQ(pot_state_tensor_proof(&tp, state, "w", nullptr), POT_OK);
  EXPECT_EQ(tp.len, 8u + 8u + 32u + 32u);  // two tensors: one path hash
  EXPECT_EQ(pot_state_verify_tensor(&from_state, &whole, tp.data, tp.len, nullptr), POT_OK);
  pot_digest bias_digest;
  ASSERT_EQ(pot_tensor_digest(&bias_digest, "b", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, 1, nullptr), POT_OK);
  EXPECT_EQ(pot_state_verify_tensor(&from_state, &bias_digest, tp.data, tp.len, &err), POT_E_PROOF_MISMATCH);
  tp.data[8] = 3;  // claims three tensors: the state digest no longer matches
  EXPECT_EQ(pot_state_verify_tensor(&from_state, &whole, tp.data, tp.len, &err), POT_E_PROOF_MISMATCH);
  EXPECT_EQ(pot_state_verify_tensor(&from_state, &whole, tp.data, tp.len - 1, &err), POT_E_MALFORMED);
  EXPECT_EQ(pot_state_tensor_proof(&untouched_bytes, state, "nope", &err), POT_E_NOT_FOUND);
  pot_bytes_free(&tp);
  pot_bytes_free(&r1);
  pot_bytes_free(&r2);
  pot_tensor_assembler_free(as);
  pot_state_free(sharded);
  pot_state_free(state);
}

TEST(CApi, DtypeNames) {
  pot_dtype d;
  ASSERT_EQ(pot_dtype_from_name(&d, "BF16", nullptr), POT_OK);
  EXPECT_EQ(d, POT_DTYPE_BF16);
  EXPECT_STREQ(pot_dtype_name(POT_DTYPE_BOOL), "BOOL");
  EXPECT_EQ(pot_dtype_size(POT_DTYPE_F64), 8u);
  EXPECT_EQ(pot_dtype_size(static_cast<pot_dtype>(0)), 0u);
  EXPECT_EQ(pot_dtype_name(static_cast<pot_dtype>(200)), nullptr);
  Err err;
  EXPECT_EQ(pot_dtype_from_name(&d, "F8", &err), POT_E_UNSUPPORTED);
}

TEST(CApi, ConcurrentCallsOnDistinctHandlesAndSharedTreeReads) {
  pot_tree *tree = nullptr;
  ASSERT_EQ(pot_tree_open(&tree, nullptr, nullptr), POT_OK);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(pot_tree_append(nullptr, tree, &i, sizeof i, nullptr), POT_OK);
  pot_digest root;
  ASSERT_EQ(pot_tree_root(&root, tree, 1000, nullptr), POT_OK);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = t; i < 1000; i += 4) {
        pot_bytes p{};
        pot_digest leaf;
        if (pot_tree_inclusion_proof(&p, tree, i, 1000, nullptr) != POT_OK ||
            pot_tree_leaf_hash(&leaf, tree, i, nullptr) != POT_OK ||
            pot_merkle_verify_inclusion(i, 1000, &leaf, p.data, p.len, &root, nullptr) != POT_OK)
          failures++;
        pot_bytes_free(&p);
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  pot_tree_free(tree);
}
