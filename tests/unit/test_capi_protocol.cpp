// The protocol part of the C API through the shared library: spec,
// commitments, schedules, seeds, leaves, challenges, security, buckets and
// loss checks, with their error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "pot.h"
#include "test_util.h"

namespace {

const char *kSpec = R"({
  "framework": "pytorch", "framework_version": "1.13.1",
  "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
  "dtype": "F32", "attention_backend": "math", "dropout": 0.1,
  "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": true},
  "batch_size": 8, "intra_op_threads": 2, "hardware_class": "cpu",
  "seed_policy": {"kind": "per_step", "base_seed": 77}, "norm_bucket_resolution": 32
})";

std::string hex(const pot_digest &d) { return pot::test::hex(d.bytes, 32); }

}  // namespace

TEST(CApiProtocol, SpecRoundTripAndErrors) {
  pot_spec *spec = nullptr;
  pot_error *err = nullptr;
  ASSERT_EQ(pot_spec_from_json(&spec, kSpec, &err), POT_OK) << (err ? pot_error_message(err) : "");
  pot_bytes enc{};
  ASSERT_EQ(pot_spec_encode(&enc, spec, nullptr), POT_OK);
  pot_spec *back = nullptr;
  ASSERT_EQ(pot_spec_decode(&back, enc.data, enc.len, nullptr), POT_OK);
  pot_digest a, b;
  ASSERT_EQ(pot_spec_digest(&a, spec, nullptr), POT_OK);
  ASSERT_EQ(pot_spec_digest(&b, back, nullptr), POT_OK);
  EXPECT_EQ(hex(a), hex(b));
  pot_seed_policy policy;
  uint64_t seed = 0;
  ASSERT_EQ(pot_spec_seed_policy(&policy, &seed, back, nullptr), POT_OK);
  EXPECT_EQ(policy, POT_SEED_PER_STEP);
  EXPECT_EQ(seed, 77u);
  EXPECT_EQ(pot_spec_intra_op_threads(back), 2u);
  EXPECT_EQ(pot_spec_norm_bucket_resolution(back), 32u);
  pot_bytes json{};
  ASSERT_EQ(pot_spec_to_json(&json, back, nullptr), POT_OK);
  EXPECT_EQ(json.data[json.len], '\0');
  EXPECT_NE(std::string(reinterpret_cast<char *>(json.data)).find("\"nesterov\":true"), std::string::npos);
  // Bad inputs: not JSON, a broken rule, non-canonical bytes.
  pot_spec *none = nullptr;
  EXPECT_EQ(pot_spec_from_json(&none, "{", &err), POT_E_MALFORMED);
  pot_error_free(err);
  std::string unpinned = kSpec;
  unpinned.replace(unpinned.find("\"intra_op_threads\": 2"), 21, "\"intra_op_threads\": 0");
  EXPECT_EQ(pot_spec_from_json(&none, unpinned.c_str(), &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("pinned"), std::string::npos);
  pot_error_free(err);
  std::vector<uint8_t> extra(enc.data, enc.data + enc.len);
  extra.push_back(0x38);  // field 7 (other_rng_use) = false, written out
  extra.push_back(0);
  EXPECT_EQ(pot_spec_decode(&none, extra.data(), extra.size(), nullptr), POT_E_MALFORMED);
  EXPECT_EQ(none, nullptr);
  pot_bytes_free(&enc);
  pot_bytes_free(&json);
  pot_spec_free(spec);
  pot_spec_free(back);
}

TEST(CApiProtocol, CommitmentScheduleAndSamples) {
  const std::string json = R"({"initial_state_digest": ")" + std::string(64, '1') + R"(", "schedule_root": ")" +
                           std::string(64, '2') + R"(", "schedule_length": 10, "dataset_root": ")" + std::string(64, '3') +
                           R"(", "dataset_size": 100, "spec_digest": ")" + std::string(64, '4') +
                           R"(", "declared_steps": 10, "miner_identity": "ab"})";
  pot_commitment *c = nullptr;
  ASSERT_EQ(pot_commitment_from_json(&c, json.c_str(), nullptr), POT_OK);
  EXPECT_EQ(pot_commitment_declared_steps(c), 10u);
  EXPECT_EQ(pot_commitment_dataset_size(c), 100u);
  pot_digest id, id2, spec_digest;
  ASSERT_EQ(pot_commitment_run_id(&id, c, nullptr), POT_OK);
  ASSERT_EQ(pot_commitment_digests(nullptr, nullptr, nullptr, &spec_digest, c, nullptr), POT_OK);
  EXPECT_EQ(hex(spec_digest), std::string(64, '4'));
  pot_bytes enc{};
  ASSERT_EQ(pot_commitment_encode(&enc, c, nullptr), POT_OK);
  pot_commitment *back = nullptr;
  ASSERT_EQ(pot_commitment_decode(&back, enc.data, enc.len, nullptr), POT_OK);
  ASSERT_EQ(pot_commitment_run_id(&id2, back, nullptr), POT_OK);
  EXPECT_EQ(hex(id), hex(id2));
  EXPECT_EQ(pot_commitment_decode(&back, enc.data, enc.len - 1, nullptr), POT_E_MALFORMED);
  pot_bytes_free(&enc);
  pot_commitment_free(c);
  pot_commitment_free(back);

  // Explicit schedule entry round trip with micro-batches.
  const uint64_t idx[5] = {4, 1, 9, 0, 7};
  const uint32_t sizes[2] = {3, 2};
  pot_bytes e{};
  ASSERT_EQ(pot_schedule_entry_encode(&e, 3, idx, 5, sizes, 2, 10, nullptr), POT_OK);
  uint64_t step = 0, got[5];
  uint32_t got_sizes[2];
  size_t n = 0, m = 0;
  EXPECT_EQ(pot_schedule_entry_decode(&step, nullptr, &n, nullptr, &m, e.data, e.len, nullptr), POT_OK);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(m, 2u);
  n = 4;  // too small: refused, the sizes needed returned
  EXPECT_EQ(pot_schedule_entry_decode(&step, got, &n, got_sizes, &m, e.data, e.len, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(n, 5u);
  ASSERT_EQ(pot_schedule_entry_decode(&step, got, &n, got_sizes, &m, e.data, e.len, nullptr), POT_OK);
  EXPECT_EQ(step, 3u);
  EXPECT_EQ(std::vector<uint64_t>(got, got + 5), std::vector<uint64_t>(idx, idx + 5));
  EXPECT_EQ(got_sizes[0], 3u);
  const uint32_t bad_sizes[2] = {3, 3};
  pot_bytes none{};
  EXPECT_EQ(pot_schedule_entry_encode(&none, 3, idx, 5, bad_sizes, 2, 10, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_schedule_entry_encode(&none, 3, idx, 5, sizes, 2, 9, nullptr), POT_E_OUT_OF_RANGE);
  pot_bytes_free(&e);
  // The seeded schedule's root equals the root of its entries.
  pot_tree *tree = nullptr;
  ASSERT_EQ(pot_tree_open(&tree, nullptr, nullptr), POT_OK);
  for (uint64_t t = 1; t <= 9; ++t) {
    pot_bytes s{};
    ASSERT_EQ(pot_seeded_schedule_entry(&s, 5, 20, 6, 3, t, nullptr), POT_OK);
    ASSERT_EQ(pot_tree_append(nullptr, tree, s.data, s.len, nullptr), POT_OK);
    pot_bytes_free(&s);
  }
  pot_digest r1, r2;
  ASSERT_EQ(pot_tree_root(&r1, tree, 9, nullptr), POT_OK);
  ASSERT_EQ(pot_seeded_schedule_root(&r2, 5, 20, 6, 3, 9, nullptr), POT_OK);
  EXPECT_EQ(hex(r1), hex(r2));
  EXPECT_EQ(pot_seeded_schedule_root(&r2, 5, 20, 6, 4, 9, nullptr), POT_E_INVALID_ARGUMENT);
  pot_tree_free(tree);
  pot_digest sd;
  const uint8_t junk[16] = {};
  EXPECT_EQ(pot_sample_digest(&sd, junk, sizeof junk, nullptr), POT_E_MALFORMED);
}

TEST(CApiProtocol, SeedsLeavesChallengesSecurityBuckets) {
  uint64_t seed = 0;
  ASSERT_EQ(pot_seed_derive(&seed, 42, 7, nullptr), POT_OK);
  EXPECT_NE(seed, 0u);
  pot_digest state;
  ASSERT_EQ(pot_sha256(&state, "s", 1, nullptr), POT_OK);
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  ASSERT_EQ(pot_step_leaf_encode(leaf, 9, &state, 1.25, nullptr), POT_OK);
  uint64_t step = 0;
  double loss = 0;
  pot_digest back;
  ASSERT_EQ(pot_step_leaf_decode(&step, &back, &loss, leaf, sizeof leaf, nullptr), POT_OK);
  EXPECT_EQ(step, 9u);
  EXPECT_EQ(loss, 1.25);
  EXPECT_EQ(std::memcmp(back.bytes, state.bytes, 32), 0);
  EXPECT_EQ(pot_step_leaf_encode(leaf, 0, &state, 1.0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_step_leaf_decode(&step, nullptr, nullptr, leaf, 59, nullptr), POT_E_MALFORMED);

  uint64_t steps[5] = {};
  const uint8_t beacon[3] = {1, 2, 3};
  ASSERT_EQ(pot_challenge_derive(steps, 5, beacon, 3, &state, 100, nullptr), POT_OK);
  for (uint64_t s : steps) EXPECT_TRUE(s >= 1 && s <= 100);
  uint64_t untouched[2] = {0, 0};
  EXPECT_EQ(pot_challenge_derive(untouched, 2, beacon, 0, &state, 100, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(untouched[0], 0u);
  EXPECT_EQ(pot_challenge_derive(untouched, 2, beacon, 3, &state, 1, nullptr), POT_E_INVALID_ARGUMENT);

  double p = 0;
  ASSERT_EQ(pot_security_detection_probability(&p, 10, 2, 3, nullptr), POT_OK);
  EXPECT_NEAR(p, 1 - 56.0 / 120.0, 1e-15);
  uint64_t k = 0;
  ASSERT_EQ(pot_security_challenges_needed(&k, 10000, 100, 0.99, nullptr), POT_OK);
  EXPECT_EQ(k, 448u);
  EXPECT_EQ(pot_security_challenges_needed(&k, 10000, 0, 0.99, nullptr), POT_E_INVALID_ARGUMENT);

  int64_t bucket = 0;
  ASSERT_EQ(pot_norm_bucket(&bucket, 2.0, 16, nullptr), POT_OK);
  EXPECT_EQ(bucket, 16);
  ASSERT_EQ(pot_norm_bucket(&bucket, 0.0, 16, nullptr), POT_OK);
  EXPECT_EQ(bucket, pot_norm_bucket_zero());
  ASSERT_EQ(pot_norm_bucket(&bucket, NAN, 16, nullptr), POT_OK);
  EXPECT_EQ(bucket, pot_norm_bucket_nonfinite());
  EXPECT_EQ(pot_norm_bucket(&bucket, -1.0, 16, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_norm_buckets_match(16, 17), 1);
  EXPECT_EQ(pot_norm_buckets_match(16, 18), 0);
}

TEST(CApiProtocol, LossChecks) {
  pot_losscheck_params *p = nullptr;
  ASSERT_EQ(pot_losscheck_params_new(&p, nullptr), POT_OK);
  double v = 0;
  ASSERT_EQ(pot_losscheck_params_get(&v, p, POT_LOSSCHECK_WINDOW, nullptr), POT_OK);
  EXPECT_EQ(v, 20);
  pot_error *err = nullptr;
  EXPECT_EQ(pot_losscheck_params_set(p, POT_LOSSCHECK_WINDOW, 2.5, &err), POT_E_INVALID_ARGUMENT);
  pot_error_free(err);
  EXPECT_EQ(pot_losscheck_params_set(p, POT_LOSSCHECK_MAX_DROP, 0.0, nullptr), POT_E_INVALID_ARGUMENT);
  ASSERT_EQ(pot_losscheck_params_get(&v, p, POT_LOSSCHECK_MAX_DROP, nullptr), POT_OK);
  EXPECT_EQ(v, 0.9);  // unchanged after a refused set
  ASSERT_EQ(pot_losscheck_params_set(p, POT_LOSSCHECK_FROZEN_MIN_STEPS, 15, nullptr), POT_OK);
  // 100 honest-looking steps, then 30 frozen ones, then more decrease.
  std::vector<double> losses;
  for (int i = 0; i < 100; ++i) losses.push_back(3.0 * std::exp(-i / 40.0) + 0.01 * ((i * 37) % 7));
  for (int i = 0; i < 30; ++i) losses.push_back(0.9);
  for (int i = 0; i < 50; ++i) losses.push_back(0.85 * std::exp(-i / 40.0) + 0.01 * ((i * 37) % 7));
  pot_losscheck_report *r = nullptr;
  ASSERT_EQ(pot_losscheck_run(&r, losses.data(), losses.size(), p, nullptr), POT_OK);
  bool frozen = false;
  for (size_t i = 0; i < pot_losscheck_report_count(r); ++i) {
    pot_loss_flag_kind kind;
    uint64_t a, b;
    const char *msg;
    ASSERT_EQ(pot_losscheck_report_flag(&kind, &a, &b, &msg, r, i, nullptr), POT_OK);
    if (kind == POT_LOSS_FROZEN) {
      frozen = true;
      EXPECT_EQ(a, 101u);
      EXPECT_EQ(b, 130u);
      EXPECT_STREQ(pot_loss_flag_name(kind), "frozen");
    }
  }
  EXPECT_TRUE(frozen);
  EXPECT_EQ(pot_losscheck_report_flag(nullptr, nullptr, nullptr, nullptr, r, 999, nullptr), POT_E_OUT_OF_RANGE);
  pot_losscheck_report_free(r);
  pot_losscheck_params_free(p);
}
