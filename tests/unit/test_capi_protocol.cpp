// The protocol part of the C API through the shared library: spec,
// commitments, schedules, seeds, leaves, challenges, security, buckets and
// loss checks, with their error paths.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <algorithm>
#include <vector>

#include "pot.h"
#include "capi_test_util.h"
#include "test_util.h"

namespace {

const char *kSpec = R"({
  "framework": "pytorch", "framework_version": "1.13.1",
  "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
  "dtype": "F32", "attention_backend": "math", "dropout": 0.1,
  "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": true},
  "batch_size": 8, "intra_op_threads": 2, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
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

// Each parameter group follows the one schedule from its own base rate
// (docs/PROTOCOL.md 14.5).
TEST(CApiProtocol, GroupLearningRatesThroughTheCApi) {
  std::string j = kSpec;
  j.replace(j.find("\"norm_bucket_resolution\": 32"), 28,
            R"("norm_bucket_resolution": 32, "lr_schedule": {"phases": [{"kind": "step", "step_size": 2, "gamma": 0.5}]},
               "param_groups": [{"optimizer": {"kind": "sgd", "lr": 0.4}, "params": ["head.bias"]}])");
  pot_spec *spec = nullptr;
  pot_error *err = nullptr;
  ASSERT_EQ(pot_spec_from_json(&spec, j.c_str(), &err), POT_OK) << (err ? pot_error_message(err) : "");
  EXPECT_EQ(pot_spec_group_count(spec), 2u);
  EXPECT_EQ(pot_spec_group_count(nullptr), 0u);
  double r[5] = {-1, -1, -1, -1, -1};
  ASSERT_EQ(pot_spec_group_learning_rates(r, 5, spec, 1, 1, nullptr), POT_OK);
  EXPECT_EQ(std::vector<double>(r, r + 5), (std::vector<double>{0.4, 0.4, 0.2, 0.2, 0.1}));
  double g0[3], plain[3];
  ASSERT_EQ(pot_spec_group_learning_rates(g0, 3, spec, 0, 2, nullptr), POT_OK);
  ASSERT_EQ(pot_spec_learning_rates(plain, 3, spec, 2, nullptr), POT_OK);
  EXPECT_EQ(std::vector<double>(g0, g0 + 3), std::vector<double>(plain, plain + 3));
  r[0] = -1;
  EXPECT_EQ(pot_spec_group_learning_rates(r, 1, spec, 2, 1, &err), POT_E_OUT_OF_RANGE);
  EXPECT_NE(std::string(pot_error_message(err)).find("the spec has 2"), std::string::npos);
  pot_error_free(err);
  EXPECT_EQ(r[0], -1);
  pot_spec_free(spec);
}

TEST(CApiProtocol, LearningRatesThroughTheCApi) {
  std::string j = kSpec;
  j.replace(j.find("\"norm_bucket_resolution\": 32"), 28,
            R"("norm_bucket_resolution": 32, "lr_schedule": {"phases": [{"kind": "step", "step_size": 2, "gamma": 0.5}]})");
  pot_spec *spec = nullptr;
  pot_error *err = nullptr;
  ASSERT_EQ(pot_spec_from_json(&spec, j.c_str(), &err), POT_OK) << (err ? pot_error_message(err) : "");
  double r[5] = {-1, -1, -1, -1, -1};
  ASSERT_EQ(pot_spec_learning_rates(r, 5, spec, 1, nullptr), POT_OK);
  EXPECT_EQ(std::vector<double>(r, r + 5), (std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.025}));
  EXPECT_EQ(pot_spec_learning_rates(r, 1, spec, 4, nullptr), POT_OK);
  EXPECT_EQ(r[0], 0.05);
  // Nothing asked, nothing written (out may be NULL).
  EXPECT_EQ(pot_spec_learning_rates(nullptr, 0, spec, 1, nullptr), POT_OK);
  // Misuse and bounds, each with its status and no output written.
  r[0] = -1;
  EXPECT_EQ(pot_spec_learning_rates(nullptr, 3, spec, 1, &err), POT_E_INVALID_ARGUMENT);
  pot_error_free(err);
  EXPECT_EQ(pot_spec_learning_rates(r, 1, nullptr, 1, &err), POT_E_INVALID_ARGUMENT);
  pot_error_free(err);
  // More than a call may ask (a binding allocates out first): refused, whatever out is.
  EXPECT_EQ(pot_spec_learning_rates(r, POT_MAX_RATES_PER_CALL + 1, spec, 1, &err), POT_E_LIMIT);
  EXPECT_NE(std::string(pot_error_message(err)).find("POT_MAX_RATES_PER_CALL"), std::string::npos);
  pot_error_free(err);
  EXPECT_EQ(r[0], -1);
  EXPECT_EQ(pot_spec_learning_rates(r, 1, spec, 0, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("steps start at 1"), std::string::npos);
  pot_error_free(err);
  EXPECT_EQ(pot_spec_learning_rates(r, 2, spec, uint64_t{1} << 32, &err), POT_E_OUT_OF_RANGE);
  pot_error_free(err);
  EXPECT_EQ(pot_spec_learning_rates(r, 1, spec, UINT64_MAX, &err), POT_E_OUT_OF_RANGE);
  pot_error_free(err);
  EXPECT_EQ(r[0], -1);
  pot_spec_free(spec);
}

TEST(CApiProtocol, CommitmentScheduleAndSamples) {
  const std::string json = R"({"task_id": ")" + std::string(64, '7') + R"(", "initial_state_digest": ")" + std::string(64, '1') + R"(", "schedule_root": ")" +
                           std::string(64, '2') + R"(", "dataset_root": ")" + std::string(64, '3') +
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
  pot_digest run;
  ASSERT_EQ(pot_sha256(&run, "run", 3, nullptr), POT_OK);
  ASSERT_EQ(pot_seed_derive(&seed, 42, &run, 7, nullptr), POT_OK);
  EXPECT_NE(seed, 0u);
  EXPECT_EQ(pot_seed_derive(&seed, 42, nullptr, 7, nullptr), POT_E_INVALID_ARGUMENT);  // the run is required
  pot_digest state;
  ASSERT_EQ(pot_sha256(&state, "s", 1, nullptr), POT_OK);
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  EXPECT_EQ(pot_step_leaf_size(), 132u);
  pot_digest stats;
  ASSERT_EQ(pot_sha256(&stats, "t", 1, nullptr), POT_OK);
  ASSERT_EQ(pot_step_leaf_encode(leaf, &run, 9, &state, &stats, 1.25, 0.375, nullptr), POT_OK);
  uint64_t step = 0;
  double loss = 0, norm = 0;
  pot_digest back, back_run, back_stats;
  ASSERT_EQ(pot_step_leaf_decode(&back_run, &step, &back, &back_stats, &loss, &norm, leaf, sizeof leaf, nullptr),
            POT_OK);
  EXPECT_EQ(std::memcmp(back_stats.bytes, stats.bytes, 32), 0);
  EXPECT_EQ(step, 9u);
  EXPECT_EQ(loss, 1.25);
  EXPECT_EQ(norm, 0.375);
  EXPECT_EQ(std::memcmp(back.bytes, state.bytes, 32), 0);
  EXPECT_EQ(std::memcmp(back_run.bytes, run.bytes, 32), 0);
  ASSERT_EQ(pot_step_leaf_decode(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, leaf, sizeof leaf, nullptr),
            POT_OK);
  EXPECT_EQ(pot_step_leaf_encode(leaf, &run, 0, &state, &stats, 1.0, 0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_step_leaf_encode(leaf, &run, 1, &state, &stats, 1.0, -1.0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_step_leaf_encode(leaf, nullptr, 1, &state, &stats, 1.0, 0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_step_leaf_encode(leaf, &run, 1, &state, nullptr, 1.0, 0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_step_leaf_decode(nullptr, &step, nullptr, nullptr, nullptr, nullptr, leaf, 131, nullptr),
            POT_E_MALFORMED);

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
  uint64_t bond = 0;
  ASSERT_EQ(pot_security_bond(&bond, 100, 0.25, nullptr), POT_OK);
  EXPECT_EQ(bond, 300u);  // 0.25 B >= 0.75 * 100
  EXPECT_EQ(pot_security_bond(&bond, 100, 0.0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_security_bond(&bond, UINT64_MAX, 1e-3, nullptr), POT_E_OUT_OF_RANGE);
  EXPECT_EQ(pot_security_bond(nullptr, 1, 0.5, nullptr), POT_E_INVALID_ARGUMENT);

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

namespace {

pot_bytes proof_of(pot_tree *t, uint64_t index, uint64_t size) {
  pot_bytes p{};
  EXPECT_EQ(pot_tree_inclusion_proof(&p, t, index, size, nullptr), POT_OK);
  return p;
}

void write_tensor(const std::string &path, const char *name, const float *v, uint64_t n) {
  pot_safetensors_writer *w = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(w, name, POT_DTYPE_F32, &n, 1, v, n * sizeof(float), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_write(w, path.c_str(), nullptr), POT_OK);
  pot_safetensors_writer_free(w);
}

}  // namespace

// A run built and opened through pot.h only, then verified and witnessed.
TEST(CApiProtocol, OpeningAndWitnessesEndToEnd) {
  pot::test::TempDir dir;
  const uint64_t samples = 6, steps = 4;
  pot_tree *dataset = nullptr, *schedule = nullptr, *log = nullptr;
  ASSERT_EQ(pot_tree_open(&dataset, nullptr, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_open(&schedule, nullptr, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_open(&log, nullptr, nullptr), POT_OK);
  std::vector<std::vector<uint8_t>> payloads;
  for (uint64_t i = 0; i < samples; ++i) {
    const float x[2] = {float(i), 1.0f};
    write_tensor(dir.file(fmt::format("s{}", i)), "x", x, 2);
    payloads.push_back(pot::test::read_file(dir.file(fmt::format("s{}", i))));
    pot_digest d;
    ASSERT_EQ(pot_sample_digest(&d, payloads.back().data(), payloads.back().size(), nullptr), POT_OK);
    ASSERT_EQ(pot_tree_append(nullptr, dataset, d.bytes, 32, nullptr), POT_OK);
  }
  std::vector<pot_digest> states;
  float w[3] = {1, 2, 3};
  for (uint64_t t = 0; t <= steps; ++t) {
    if (t) {
      for (float &x : w) x *= 0.5f;
      pot_bytes e{};
      ASSERT_EQ(pot_seeded_schedule_entry(&e, 9, samples, 2, 1, t, nullptr), POT_OK);
      ASSERT_EQ(pot_tree_append(nullptr, schedule, e.data, e.len, nullptr), POT_OK);
      pot_bytes_free(&e);
    }
    const std::string path = dir.file("state" + std::to_string(t));
    write_tensor(path, "param/w", w, 3);
    pot_digest d;
    ASSERT_EQ(pot_safetensors_digest_file(&d, path.c_str(), 1, nullptr), POT_OK);
    states.push_back(d);
  }
  pot_digest sroot, droot, lroot;
  ASSERT_EQ(pot_tree_root(&sroot, schedule, steps, nullptr), POT_OK);
  ASSERT_EQ(pot_tree_root(&droot, dataset, samples, nullptr), POT_OK);
  const std::string cj = "{\"task_id\": \"" + std::string(64, '7') + "\", \"initial_state_digest\": \"" + hex(states[0]) + "\", \"schedule_root\": \"" + hex(sroot) +
                         "\", \"dataset_root\": \"" + hex(droot) +
                         "\", \"dataset_size\": 6, \"spec_digest\": \"" + std::string(64, '0') +
                         "\", \"declared_steps\": 4, \"miner_identity\": \"01\"}";
  pot_commitment *c = nullptr;
  ASSERT_EQ(pot_commitment_from_json(&c, cj.c_str(), nullptr), POT_OK);
  pot_digest run_id;
  ASSERT_EQ(pot_commitment_run_id(&run_id, c, nullptr), POT_OK);
  // The log: each leaf names the run and commits the update norm.
  std::vector<std::array<uint8_t, POT_STEP_LEAF_SIZE>> leaves;
  std::vector<std::vector<uint8_t>> tables;
  for (uint64_t t = 1; t <= steps; ++t) {
    pot_safetensors *a = nullptr, *b = nullptr;
    ASSERT_EQ(pot_safetensors_open(&a, dir.file("state" + std::to_string(t - 1)).c_str(), nullptr), POT_OK);
    ASSERT_EQ(pot_safetensors_open(&b, dir.file("state" + std::to_string(t)).c_str(), nullptr), POT_OK);
    double norm = 0;
    ASSERT_EQ(pot_update_norm(&norm, a, b, "param/", nullptr), POT_OK);
    const pot_digest stats = pot::test::stats_digest_of(b);
    tables.push_back(pot::test::table_of(b));
    pot_safetensors_free(a);
    pot_safetensors_free(b);
    leaves.emplace_back();
    ASSERT_EQ(pot_step_leaf_encode(leaves.back().data(), &run_id, t, &states[t], &stats, 0.5, norm, nullptr), POT_OK);
    ASSERT_EQ(pot_tree_append(nullptr, log, leaves.back().data(), POT_STEP_LEAF_SIZE, nullptr), POT_OK);
  }
  ASSERT_EQ(pot_tree_root(&lroot, log, steps, nullptr), POT_OK);

  // The miner opens step 3.
  const uint64_t t = 3;
  pot_opening *o = nullptr;
  ASSERT_EQ(pot_opening_new(&o, &run_id, t, steps, &states[t - 1], nullptr), POT_OK);
  const uint8_t *pre = leaves[t - 2].data(), *post = leaves[t - 1].data();
  pot_bytes p1 = proof_of(log, t - 2, steps), p2 = proof_of(log, t - 1, steps), p3 = proof_of(schedule, t - 1, steps);
  ASSERT_EQ(pot_opening_set_pre_leaf(o, pre, POT_STEP_LEAF_SIZE, p1.data, p1.len, nullptr), POT_OK);
  ASSERT_EQ(pot_opening_set_post_leaf(o, post, POT_STEP_LEAF_SIZE, p2.data, p2.len, nullptr), POT_OK);
  pot_bytes entry{};
  ASSERT_EQ(pot_seeded_schedule_entry(&entry, 9, samples, 2, 1, t, nullptr), POT_OK);
  ASSERT_EQ(pot_opening_set_schedule(o, entry.data, entry.len, p3.data, p3.len, nullptr), POT_OK);
  uint64_t idx[2];
  uint32_t micro[1];
  size_t n = 2, m = 1;
  ASSERT_EQ(pot_schedule_entry_decode(nullptr, idx, &n, micro, &m, entry.data, entry.len, nullptr), POT_OK);
  for (size_t i = 0; i < n; ++i) {
    pot_bytes sp = proof_of(dataset, idx[i], samples);
    ASSERT_EQ(pot_opening_add_sample(o, idx[i], payloads[idx[i]].data(), payloads[idx[i]].size(), sp.data, sp.len,
                                     nullptr),
              POT_OK);
    pot_bytes_free(&sp);
  }
  ASSERT_EQ(pot_opening_set_state_refs(o, "state2", nullptr, nullptr), POT_OK);
  // The run record (check 32): a smooth run flags nothing.
  EXPECT_EQ(pot::test::set_run_record(o, leaves, tables, {}), "[]");
  pot_bytes manifest{};
  ASSERT_EQ(pot_opening_encode(&manifest, o, nullptr), POT_OK);

  // A verifier checks it, with the served states.
  pot_opening_check check = POT_CHECK_MANIFEST;
  const std::string s2 = dir.file("state2"), s3 = dir.file("state3"), s1 = dir.file("state1");
  EXPECT_EQ(pot_opening_verify(&check, c, t, steps, &lroot, manifest.data, manifest.len, s2.c_str(), s3.c_str(), 1,
                               nullptr),
            POT_OK);
  EXPECT_EQ(check, POT_CHECK_OK);
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_COMMITTED_NORM), "committed_norm");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_RUN_FLAGS), "run_flags");
  pot_error *err = nullptr;
  // The run sealed on the ledger with none: the same; with step 2: a miner
  // hiding a flag from the ledger, or a ledger naming another, fails 32.
  ASSERT_EQ(pot_commitment_set_sealed_flags(c, nullptr, 0, nullptr), POT_OK);
  EXPECT_EQ(pot_opening_verify(&check, c, t, steps, &lroot, manifest.data, manifest.len, nullptr, nullptr, 1, nullptr),
            POT_OK);
  const uint64_t two = 2, bad[2] = {3, 2}, past = 5;
  ASSERT_EQ(pot_commitment_set_sealed_flags(c, &two, 1, nullptr), POT_OK);
  EXPECT_EQ(pot_opening_verify(&check, c, t, steps, &lroot, manifest.data, manifest.len, nullptr, nullptr, 1, &err),
            POT_E_PROOF_MISMATCH);
  EXPECT_EQ(check, POT_CHECK_RUN_FLAGS);
  EXPECT_NE(std::string(pot_error_message(err)).find("the run sealed on the ledger with 2"), std::string::npos)
      << pot_error_message(err);
  pot_error_free(err);
  err = nullptr;
  EXPECT_EQ(pot_commitment_set_sealed_flags(c, bad, 2, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_commitment_set_sealed_flags(c, &past, 1, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_commitment_set_sealed_flags(c, nullptr, 1, nullptr), POT_E_INVALID_ARGUMENT);
  ASSERT_EQ(pot_commitment_set_sealed_flags(c, nullptr, 0, nullptr), POT_OK);
  EXPECT_EQ(pot_opening_verify(&check, c, t, steps, &lroot, manifest.data, manifest.len, s1.c_str(), nullptr, 1, &err),
            POT_E_PROOF_MISMATCH);
  EXPECT_EQ(check, POT_CHECK_PRE_STATE_DIGEST);
  EXPECT_NE(std::string(pot_error_message(err)).find("pre_state_digest"), std::string::npos);
  pot_error_free(err);
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_SAMPLE_PROOF), "sample_proof");
  EXPECT_EQ(pot_opening_verify(&check, c, t, steps, &lroot, manifest.data, 10, nullptr, nullptr, 1, nullptr),
            POT_E_MALFORMED);
  EXPECT_EQ(check, POT_CHECK_MANIFEST);
  EXPECT_EQ(pot_opening_verify(&check, c, t + 1, steps, &lroot, manifest.data, manifest.len, nullptr, nullptr, 1, nullptr),
            POT_E_PROOF_MISMATCH);
  EXPECT_EQ(check, POT_CHECK_STEP);

  // Three verifiers commit and reveal; the cluster reproduces leaf t.
  pot_verdict *v = nullptr;
  ASSERT_EQ(pot_verdict_new(&v, POT_WITNESS_BITWISE, 2, nullptr), POT_OK);
  for (const char *who : {"v1", "v2", "v3"}) {
    uint8_t salt[POT_WITNESS_SALT_SIZE];
    ASSERT_EQ(pot_witness_salt(salt, nullptr), POT_OK);
    const auto *id = reinterpret_cast<const uint8_t *>(who);
    const pot_digest &replayed = std::string(who) == "v3" ? states[0] : states[t];  // v3 is wrong
    pot_digest wc;
    const std::string st = pot::test::replayed_statement_json(hex(run_id), t, 0, hex(replayed), 0);
    ASSERT_EQ(pot_witness_commitment(&wc, st.c_str(), salt, sizeof salt, id, 2, nullptr), POT_OK);
    EXPECT_EQ(pot_witness_verify_reveal(&wc, st.c_str(), salt, sizeof salt, id, 2, nullptr), POT_OK);
    EXPECT_EQ(pot_witness_verify_reveal(&wc, st.c_str(), salt, sizeof salt, reinterpret_cast<const uint8_t *>("vX"),
                                        2, nullptr),
              POT_E_PROOF_MISMATCH);
    // Another challenge id: the commitment is bound to its challenge.
    const std::string other = pot::test::replayed_statement_json(hex(run_id), t, 1, hex(replayed), 0);
    EXPECT_EQ(pot_witness_verify_reveal(&wc, other.c_str(), salt, sizeof salt, id, 2, nullptr), POT_E_PROOF_MISMATCH);
    ASSERT_EQ(pot_verdict_add_reveal(v, id, 2, &replayed, 0, nullptr), POT_OK);
  }
  pot_verdict_outcome outcome;
  size_t cluster = 0;
  ASSERT_EQ(pot_verdict_decide(&outcome, &cluster, v, &states[t], nullptr, nullptr), POT_OK);
  EXPECT_EQ(outcome, POT_VERDICT_PASS);
  EXPECT_EQ(cluster, 2u);
  ASSERT_EQ(pot_verdict_decide(&outcome, &cluster, v, &states[1], nullptr, nullptr), POT_OK);
  EXPECT_EQ(outcome, POT_VERDICT_FAIL);
  EXPECT_NE(std::string(pot_verdict_reason(v)).find("differs"), std::string::npos);
  pot_verdict_free(v);

  for (pot_bytes *b : {&p1, &p2, &p3, &entry, &manifest}) pot_bytes_free(b);
  pot_opening_free(o);
  pot_commitment_free(c);
  pot_tree_free(dataset);
  pot_tree_free(schedule);
  pot_tree_free(log);
}

TEST(CApiProtocol, LedgerThroughJsonCalls) {
  pot_ledger *l = nullptr;
  pot_error *err = nullptr;
  EXPECT_EQ(pot_ledger_new(&l, R"({"draw_delay": 1, "opening_window": 0, "commit_window": 1, "reveal_window": 1,
                                  "max_committee_size": 1, "min_stake": 1, "max_rounds": 1, "max_attempts": 1,
                                  "dispute_window": 1, "dispute_arity": 2, "task_bond": 1, "miner_bond": 1,
                                  "dispute_bond": 1, "max_task_blocks": 1, "max_open_tasks": 1, "miner_grace": 0})",
                           &err),
            POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("opening_window"), std::string::npos) << pot_error_message(err);
  pot_error_free(err);
  // A config of pot 0.2 (no bonds) is refused, naming the version.
  EXPECT_EQ(pot_ledger_new(&l, R"({"draw_delay": 1, "opening_window": 1, "commit_window": 1, "reveal_window": 1,
                                  "max_committee_size": 1, "min_stake": 1, "max_rounds": 1, "max_attempts": 1,
                                  "dispute_window": 1, "dispute_arity": 2})",
                           &err),
            POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("a config of pot 0.2"), std::string::npos)
      << pot_error_message(err);
  pot_error_free(err);
  // One bond key left out is named.
  EXPECT_EQ(pot_ledger_new(&l, R"({"draw_delay": 1, "opening_window": 1, "commit_window": 1, "reveal_window": 1,
                                  "max_committee_size": 1, "min_stake": 1, "max_rounds": 1, "max_attempts": 1,
                                  "dispute_window": 1, "dispute_arity": 2, "task_bond": 1, "miner_bond": 1,
                                  "dispute_bond": 1, "max_task_blocks": 1, "max_open_tasks": 1})",
                           &err),
            POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("miner_grace"), std::string::npos) << pot_error_message(err);
  pot_error_free(err);
  // The config of protocol 2's drafts, without the opening window and the draw delay.
  EXPECT_EQ(pot_ledger_new(&l, R"({"commit_window": 10, "reveal_window": 10, "quorum": 2, "max_rounds": 4})", nullptr),
            POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_ledger_new(&l, "not json", nullptr), POT_E_MALFORMED);
  EXPECT_EQ(pot_ledger_new(&l, nullptr, nullptr), POT_E_INVALID_ARGUMENT);
  ASSERT_EQ(pot_ledger_new(&l, pot::test::kLedgerConfigJson, nullptr), POT_OK);
  pot_bytes before{}, after{}, result{};
  ASSERT_EQ(pot_ledger_save(&before, l, nullptr), POT_OK);
  // A refused call: unknown run. The state is unchanged.
  const std::string refused = R"({"call": "run_info", "run_id": ")" + std::string(64, '0') + "\"}";
  EXPECT_EQ(pot_ledger_apply(&result, l, refused.c_str(), &err), POT_E_NOT_FOUND);
  pot_error_free(err);
  EXPECT_EQ(pot_ledger_apply(&result, l, "{\"call\": \"nope\"}", nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_ledger_apply(&result, l, "not json", nullptr), POT_E_MALFORMED);
  ASSERT_EQ(pot_ledger_save(&after, l, nullptr), POT_OK);
  ASSERT_EQ(before.len, after.len);
  EXPECT_EQ(std::memcmp(before.data, after.data, before.len), 0);
  // Outcome records: bad arguments and bad bytes are refused by status.
  pot_bytes record_json{};
  const uint8_t junk[4] = {14, 'p', 'o', 't'};
  EXPECT_EQ(pot_ledger_outcome_decode(nullptr, junk, sizeof junk, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_ledger_outcome_decode(&record_json, nullptr, 4, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_ledger_outcome_decode(&record_json, junk, sizeof junk, nullptr), POT_E_MALFORMED);
  // A task posted by its owner, a commitment that matches it accepted, then
  // the state saved, loaded and saved again.
  const std::string tj = std::string(R"({"owner": "ee", "spec": )") + kSpec + R"(, "dataset_root": ")" +
                         std::string(64, '3') + R"(", "dataset_size": 10, "initial_state": {"published_digest": ")" +
                         std::string(64, '1') + R"("}, "schedule": {"listed_root": ")" + std::string(64, '2') +
                         R"("}, "min_steps": 4, "max_steps": 4, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000})";
  pot_task *task = nullptr;
  ASSERT_EQ(pot_task_from_json(&task, tj.c_str(), &err), POT_OK) << pot_error_message(err);
  pot_digest task_id{}, spec_digest{};
  ASSERT_EQ(pot_task_id(&task_id, task, nullptr), POT_OK);
  pot_spec *task_spec = nullptr;
  ASSERT_EQ(pot_task_spec(&task_spec, task, nullptr), POT_OK);
  ASSERT_EQ(pot_spec_digest(&spec_digest, task_spec, nullptr), POT_OK);
  pot_bytes task_bytes{};
  ASSERT_EQ(pot_task_encode(&task_bytes, task, nullptr), POT_OK);
  pot_task *decoded = nullptr;
  ASSERT_EQ(pot_task_decode(&decoded, task_bytes.data, task_bytes.len, nullptr), POT_OK);
  pot_digest decoded_id{};
  ASSERT_EQ(pot_task_id(&decoded_id, decoded, nullptr), POT_OK);
  EXPECT_EQ(std::memcmp(decoded_id.bytes, task_id.bytes, 32), 0);
  const std::string post = R"({"call": "post_task", "caller": "ee", "now": 1, "task": ")" +
                           pot::test::hex(task_bytes.data, task_bytes.len) + "\"}";
  // The task bond (docs/ledger.md 2.18): refused until the owner's funds
  // are deposited, then locked.
  EXPECT_EQ(pot_ledger_apply(&result, l, post.c_str(), nullptr), POT_E_STATE);
  for (const char *who : {"ee", "ab"}) {
    const std::string deposit = fmt::format(R"({{"call": "deposit", "identity": "{}", "amount": 1000, "now": 1}})", who);
    ASSERT_EQ(pot_ledger_apply(&result, l, deposit.c_str(), nullptr), POT_OK);
    pot_bytes_free(&result);
  }
  ASSERT_EQ(pot_ledger_apply(&result, l, post.c_str(), nullptr), POT_OK);
  EXPECT_NE(std::string(reinterpret_cast<char *>(result.data)).find(pot::test::hex(task_id.bytes, 32)),
            std::string::npos);
  pot_bytes_free(&result);
  auto commitment_json = [&](const std::string &initial) {
    return R"({"task_id": ")" + pot::test::hex(task_id.bytes, 32) + R"(", "initial_state_digest": ")" + initial +
           R"(", "schedule_root": ")" + std::string(64, '2') + R"(", "dataset_root": ")" + std::string(64, '3') +
           R"(", "dataset_size": 10, "spec_digest": ")" + pot::test::hex(spec_digest.bytes, 32) +
           R"(", "declared_steps": 4, "miner_identity": "ab"})";
  };
  pot_commitment *c = nullptr, *mine = nullptr;
  ASSERT_EQ(pot_commitment_from_json(&c, commitment_json(std::string(64, '1')).c_str(), nullptr), POT_OK);
  EXPECT_EQ(pot_task_check_commitment(task, c, nullptr), POT_OK);
  pot_digest named{};
  ASSERT_EQ(pot_commitment_task_id(&named, c, nullptr), POT_OK);
  EXPECT_EQ(std::memcmp(named.bytes, task_id.bytes, 32), 0);
  // An S_0 of the miner's choosing is refused, naming the field.
  ASSERT_EQ(pot_commitment_from_json(&mine, commitment_json(std::string(64, '5')).c_str(), nullptr), POT_OK);
  EXPECT_EQ(pot_task_check_commitment(task, mine, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("initial_state_digest"), std::string::npos);
  pot_error_free(err);
  err = nullptr;
  pot_bytes enc{};
  ASSERT_EQ(pot_commitment_encode(&enc, c, nullptr), POT_OK);
  const std::string call = R"({"call": "start_training_commitment", "caller": "ab", "now": 1, "commitment": ")" +
                           pot::test::hex(enc.data, enc.len) + "\"}";
  ASSERT_EQ(pot_ledger_apply(&result, l, call.c_str(), nullptr), POT_OK);
  EXPECT_NE(std::string(reinterpret_cast<char *>(result.data)).find("\"run_id\""), std::string::npos);
  pot_bytes_free(&result);
  ASSERT_EQ(pot_ledger_apply(&result, l, R"({"call": "account_info", "identity": "ab"})", nullptr), POT_OK);
  EXPECT_EQ(nlohmann::json::parse(reinterpret_cast<char *>(result.data)),
            (nlohmann::json{{"ok", true}, {"identity", "ab"}, {"free", 900}, {"locked", 100}}));
  pot_bytes_free(&result);
  const std::string thief = R"({"call": "start_training_commitment", "caller": "cd", "now": 2, "commitment": ")" +
                            pot::test::hex(enc.data, enc.len) + "\"}";
  EXPECT_EQ(pot_ledger_apply(&result, l, thief.c_str(), nullptr), POT_E_PERMISSION);
  pot_bytes mine_enc{};
  ASSERT_EQ(pot_commitment_encode(&mine_enc, mine, nullptr), POT_OK);
  const std::string chosen = R"({"call": "start_training_commitment", "caller": "ab", "now": 2, "commitment": ")" +
                             pot::test::hex(mine_enc.data, mine_enc.len) + "\"}";
  EXPECT_EQ(pot_ledger_apply(&result, l, chosen.c_str(), nullptr), POT_E_INVALID_ARGUMENT);
  pot_bytes_free(&mine_enc);
  pot_bytes_free(&task_bytes);
  pot_commitment_free(mine);
  pot_task_free(task);
  pot_task_free(decoded);
  pot_spec_free(task_spec);
  pot_bytes saved{}, again{};
  ASSERT_EQ(pot_ledger_save(&saved, l, nullptr), POT_OK);
  pot_ledger *back = nullptr;
  ASSERT_EQ(pot_ledger_load(&back, saved.data, saved.len, nullptr), POT_OK);
  ASSERT_EQ(pot_ledger_save(&again, back, nullptr), POT_OK);
  ASSERT_EQ(saved.len, again.len);
  EXPECT_EQ(std::memcmp(saved.data, again.data, saved.len), 0);
  EXPECT_EQ(pot_ledger_load(&back, saved.data, saved.len - 1, nullptr), POT_E_MALFORMED);
  for (pot_bytes *b : {&before, &after, &enc, &saved, &again}) pot_bytes_free(b);
  pot_commitment_free(c);
  pot_ledger_free(l);
  pot_ledger_free(back);
}

// docs/PROTOCOL.md 14.4: the process's hardware class is a valid spec field;
// a recorder for a spec of another class is refused before anything is
// written. Without LibTorch the call refuses clearly.
TEST(CApiProtocol, HardwareClassIsTheProcesssOwn) {
  const char *cls = nullptr;
  pot_error *err = nullptr;
  const pot_status s = pot_replay_hardware_class(&cls, &err);
  if (!pot_replay_available()) {
    EXPECT_EQ(s, POT_E_UNSUPPORTED);
    EXPECT_EQ(cls, nullptr);  // outputs untouched on failure
    pot_error_free(err);
    return;
  }
  ASSERT_EQ(s, POT_OK) << pot_error_message(err);
  ASSERT_NE(cls, nullptr);
  const std::string ours = cls;
  const char *again = nullptr;
  ASSERT_EQ(pot_replay_hardware_class(&again, nullptr), POT_OK);
  EXPECT_EQ(again, cls);  // one string for the process
  std::string j = kSpec;
  const std::string label = "cpu-x86_64/aten:avx2/onednn:avx2";
  j.replace(j.find(label), label.size(), ours);
  pot_spec *spec = nullptr;
  ASSERT_EQ(pot_spec_from_json(&spec, j.c_str(), &err), POT_OK) << pot_error_message(err);
  pot_spec_free(spec);
  // Another class: the recorder refuses, naming both, and writes nothing.
  const std::string other = ours.find("/aten:default/") == std::string::npos
                                ? ours.substr(0, ours.find("/aten:")) + "/aten:default" + ours.substr(ours.find("/onednn:"))
                                : ours.substr(0, ours.find("/onednn:")) + "/onednn:sse41";
  j = kSpec;
  j.replace(j.find(label), label.size(), other);
  ASSERT_EQ(pot_spec_from_json(&spec, j.c_str(), &err), POT_OK) << pot_error_message(err);
  const std::string program = ::testing::TempDir() + "/hw_program.bin";
  { std::ofstream(program, std::ios::binary) << "abc"; }
  const std::string dir = ::testing::TempDir() + "/hw_recorder";
  std::filesystem::remove_all(dir);
  // The spec names another program digest: use the file's so that only the class differs.
  pot_digest d;
  ASSERT_EQ(pot_program_digest_file(&d, program.c_str(), nullptr), POT_OK);
  pot_spec_free(spec);
  j.replace(j.find("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"), 64, hex(d));
  ASSERT_EQ(pot_spec_from_json(&spec, j.c_str(), &err), POT_OK) << pot_error_message(err);
  pot_recorder *rec = nullptr;
  EXPECT_EQ(pot_recorder_new(&rec, dir.c_str(), spec, program.c_str(), 1, &err), POT_E_UNSUPPORTED);
  EXPECT_EQ(rec, nullptr);
  const std::string m = pot_error_message(err);
  EXPECT_NE(m.find("hardware_class '" + other + "': this process computes as '" + ours + "'"), std::string::npos) << m;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the refused recorder wrote its directory";
  pot_error_free(err);
  pot_spec_free(spec);
}

TEST(CApiProtocol, ReplayAvailabilityMatchesTheBuild) {
  pot_spec *spec = nullptr;
  ASSERT_EQ(pot_spec_from_json(&spec, kSpec, nullptr), POT_OK);
  pot_replay *r = nullptr;
  pot_error *err = nullptr;
  const pot_status s = pot_replay_new(&r, spec, "/nonexistent/program.pt", &err);
  ASSERT_NE(err, nullptr);
  if (pot_replay_available()) {
    EXPECT_EQ(s, POT_E_IO) << pot_error_message(err);
  } else {
    // Without LibTorch the whole replay API is present and refuses clearly.
    EXPECT_EQ(s, POT_E_UNSUPPORTED);
    EXPECT_NE(std::string(pot_error_message(err)).find("POT_WITH_TORCH=OFF"), std::string::npos);
    pot_recorder *rec = nullptr;
    pot_error *e2 = nullptr;
    EXPECT_EQ(pot_recorder_new(&rec, "/tmp/x", spec, "/tmp/p.pt", 5, &e2), POT_E_UNSUPPORTED);
    pot_error_free(e2);
    pot_checkpoints *ck = nullptr;
    EXPECT_EQ(pot_checkpoints_open(&ck, "/tmp/x", &e2), POT_E_UNSUPPORTED);
    pot_error_free(e2);
  }
  EXPECT_EQ(r, nullptr);
  pot_error_free(err);
  // The program digest needs no LibTorch: tagged("pot/v1/program", bytes).
  const std::string path = ::testing::TempDir() + "/program.bin";
  { std::ofstream(path, std::ios::binary) << "abc"; }
  pot_digest d;
  ASSERT_EQ(pot_program_digest_file(&d, path.c_str(), nullptr), POT_OK);
  // SHA-256(0x0e || "pot/v1/program" || "abc"), computed independently.
  EXPECT_EQ(hex(d), "fdfe6bb1377b889ae8fb1ccec3a96526a75d1aa9acafb8fa67f4a12a67461824");
  EXPECT_EQ(pot_program_digest_file(&d, "/nonexistent/x", nullptr), POT_E_IO);
  // The new status has its name.
  EXPECT_STREQ(pot_status_name(POT_E_NONFINITE), "POT_E_NONFINITE");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_REPLAYED_STATE), "replayed_state");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_NONFINITE), "nonfinite");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_LEARNING_RATE), "learning_rate");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_COMMITTED_NORM), "committed_norm");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_GRADIENT_IGNORED), "gradient_ignored");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_SUBNORMAL), "subnormal");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_REPLAYED_UPDATE), "replayed_update");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_TASK_PROGRAM), "task_program");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_STATE_STATS), "state_stats");
  EXPECT_STREQ(pot_opening_check_name(POT_CHECK_RUN_FLAGS), "run_flags");
  EXPECT_STREQ(pot_opening_check_name(static_cast<pot_opening_check>(33)), "unknown");
  pot_spec_free(spec);
}

TEST(CApiProtocol, RunSeededTasksThroughTheCApi) {
  const std::string tj = std::string(R"({"owner": "ee", "spec": )") + kSpec + R"(, "dataset_root": ")" +
                         std::string(64, '3') + R"(", "dataset_size": 10, "initial_state": {"published_digest": ")" +
                         std::string(64, '1') +
                         R"("}, "schedule": {"run_seeded": {}}, "min_steps": 4, "max_steps": 6, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000})";
  pot_task *task = nullptr;
  pot_error *err = nullptr;
  ASSERT_EQ(pot_task_from_json(&task, tj.c_str(), &err), POT_OK) << pot_error_message(err);
  pot_schedule_rule rule = POT_SCHEDULE_LISTED;
  ASSERT_EQ(pot_task_schedule_rule(&rule, task, nullptr), POT_OK);
  EXPECT_EQ(rule, POT_SCHEDULE_RUN_SEEDED);
  const uint8_t miner[] = {'a', 'b'};
  uint64_t seed = 0;
  ASSERT_EQ(pot_task_run_schedule_seed(&seed, task, miner, 2, 5, nullptr), POT_OK);
  // The commitment's schedule root is the run's own seeded schedule.
  pot_commitment *c = nullptr;
  ASSERT_EQ(pot_task_commitment(&c, task, miner, 2, 5, &err), POT_OK) << pot_error_message(err);
  EXPECT_EQ(pot_task_check_commitment(task, c, nullptr), POT_OK);
  pot_digest want{}, got{};
  ASSERT_EQ(pot_seeded_schedule_root(&want, seed, 10, 8, 1, 5, nullptr), POT_OK);  // kSpec's batch of 8
  ASSERT_EQ(pot_commitment_digests(nullptr, &got, nullptr, nullptr, c, nullptr), POT_OK);
  EXPECT_EQ(std::memcmp(want.bytes, got.bytes, 32), 0);
  EXPECT_EQ(pot_commitment_declared_steps(c), 5u);
  // The index stream, in one call, is the entries' indices in order (the
  // 40 positions cross 4 epochs of the 10 samples).
  std::vector<uint64_t> stream(40);
  ASSERT_EQ(pot_seeded_schedule_stream(stream.data(), stream.size(), seed, 10, 0, nullptr), POT_OK);
  for (uint64_t t = 1; t <= 5; ++t) {
    pot_bytes e{};
    ASSERT_EQ(pot_seeded_schedule_entry(&e, seed, 10, 8, 1, t, nullptr), POT_OK);
    uint64_t step = 0, idx[8];
    size_t count = 8, micro = 1;
    uint32_t sizes[1];
    ASSERT_EQ(pot_schedule_entry_decode(&step, idx, &count, sizes, &micro, e.data, e.len, nullptr), POT_OK);
    EXPECT_TRUE(std::equal(idx, idx + 8, stream.begin() + static_cast<long>((t - 1) * 8))) << t;
    pot_bytes_free(&e);
  }
  std::vector<uint64_t> tail(3, 99);
  ASSERT_EQ(pot_seeded_schedule_stream(tail.data(), 3, seed, 10, 37, nullptr), POT_OK);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), stream.begin() + 37));
  std::fill(tail.begin(), tail.end(), 99);
  EXPECT_EQ(pot_seeded_schedule_stream(tail.data(), 3, seed, 0, 0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(pot_seeded_schedule_stream(tail.data(), POT_MAX_STREAM_POSITIONS + 1, seed, 10, 0, nullptr),
            POT_E_LIMIT);
  EXPECT_EQ(pot_seeded_schedule_stream(nullptr, 3, seed, 10, 0, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(tail, std::vector<uint64_t>(3, 99));
  // Outputs untouched on error: a step count outside 4..6, an empty identity.
  uint64_t untouched = 77;
  EXPECT_EQ(pot_task_run_schedule_seed(&untouched, task, miner, 2, 7, &err), POT_E_OUT_OF_RANGE);
  EXPECT_NE(std::string(pot_error_message(err)).find("declared_steps 7 is outside 4..6"), std::string::npos);
  pot_error_free(err);
  EXPECT_EQ(pot_task_run_schedule_seed(&untouched, task, miner, 0, 5, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("miner_identity must be 1..256 bytes, not 0"), std::string::npos)
      << pot_error_message(err);
  pot_error_free(err);
  EXPECT_EQ(pot_task_run_schedule_seed(&untouched, nullptr, miner, 2, 5, nullptr), POT_E_INVALID_ARGUMENT);
  EXPECT_EQ(untouched, 77u);
  pot_commitment *none = nullptr;
  EXPECT_EQ(pot_task_commitment(&none, task, miner, 2, 3, nullptr), POT_E_OUT_OF_RANGE);
  EXPECT_EQ(none, nullptr);
  // The identity is held to the commitment's rule before any schedule is drawn for it.
  const std::vector<uint8_t> long_identity(257, 'm');
  EXPECT_EQ(pot_task_commitment(&none, task, long_identity.data(), long_identity.size(), 5, &err),
            POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("miner_identity must be 1..256 bytes, not 257"),
            std::string::npos)
      << pot_error_message(err);
  pot_error_free(err);
  EXPECT_EQ(none, nullptr);
  // A listed task has no run schedule seed.
  const std::string listed = std::string(R"({"owner": "ee", "spec": )") + kSpec + R"(, "dataset_root": ")" +
                             std::string(64, '3') + R"(", "dataset_size": 10, "initial_state": {"published_digest": ")" +
                             std::string(64, '1') + R"("}, "schedule": {"listed_root": ")" + std::string(64, '2') +
                             R"("}, "min_steps": 4, "max_steps": 4, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000})";
  pot_task *lt = nullptr;
  ASSERT_EQ(pot_task_from_json(&lt, listed.c_str(), nullptr), POT_OK);
  EXPECT_EQ(pot_task_run_schedule_seed(&untouched, lt, miner, 2, 4, &err), POT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pot_error_message(err)).find("listed schedule"), std::string::npos);
  pot_error_free(err);
  ASSERT_EQ(pot_task_schedule_rule(&rule, lt, nullptr), POT_OK);
  EXPECT_EQ(rule, POT_SCHEDULE_LISTED);
  pot_task_free(lt);
  pot_commitment_free(c);
  pot_task_free(task);
}
