// Dataset, schedule and training commitments.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "commit/commitment.h"
#include "commit/dataset.h"
#include "core_test_util.h"
#include "hash/rfc6962.h"
#include "hash/safetensors.h"
#include "hash/state.h"
#include "test_util.h"

using namespace pot;
using pot::test::status_of;
using hash::Digest;

TEST(Dataset, SampleDigestOfSafetensorsBytes) {
  test::TempDir dir;
  const float x[4] = {1, 2, 3, 4};
  const int64_t y[1] = {3};
  auto bytes = [](const void *p, size_t n) { return ByteView(static_cast<const uint8_t *>(p), n); };
  hash::write_safetensors(dir.file("s"), {{{"x", hash::DType::kF32, {4}}, bytes(x, 16)}, {{"y", hash::DType::kI64, {}}, bytes(y, 8)}}, {});
  const Bytes payload = test::read_file(dir.file("s"));
  std::map<std::string, Digest> t = {{"x", hash::tensor_digest({"x", hash::DType::kF32, {4}}, bytes(x, 16), 1)},
                                     {"y", hash::tensor_digest({"y", hash::DType::kI64, {}}, bytes(y, 8), 1)}};
  EXPECT_EQ(commit::sample_digest(payload), hash::tensor_set_digest("pot/v1/sample", t));
  EXPECT_NE(commit::sample_digest(payload), hash::state_digest(t));  // its own domain
  hash::write_safetensors(dir.file("empty"), {}, {});
  EXPECT_EQ(status_of([&] { commit::sample_digest(test::read_file(dir.file("empty"))); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::sample_digest(ByteView(payload).first(payload.size() - 1)); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::sample_digest(Bytes(3)); }), Status::kMalformed);
}

TEST(Schedule, EntryEncodingIsStrict) {
  commit::ScheduleEntry e{5, {{4, 1, 9}, {0, 7}}};
  const Bytes b = e.encode(10);
  EXPECT_EQ(b.size(), 1u + 12 + 8 + 4 + 2 * 4 + 5 * 8);  // tag, step, count, two micro headers, indices
  const auto back = commit::ScheduleEntry::decode(b);
  EXPECT_EQ(back.step, 5u);
  EXPECT_EQ(back.micro, e.micro);
  EXPECT_EQ(back.indices(), (std::vector<uint64_t>{4, 1, 9, 0, 7}));
  EXPECT_EQ(status_of([&] { e.encode(9); }), Status::kOutOfRange);  // index 9 of a 9-sample dataset
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry{0, {{1}}}.encode(); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry{1, {}}.encode(); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry{1, {{1}, {}}}.encode(); }), Status::kInvalidArgument);
  Bytes trailing = b;
  trailing.push_back(0);
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry::decode(trailing); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry::decode(ByteView(b).first(b.size() - 1)); }), Status::kMalformed);
  Bytes huge = b;
  huge[25] = huge[26] = huge[27] = 0xff;  // first micro-batch claims 2^24+ indices
  EXPECT_NE(status_of([&] { commit::ScheduleEntry::decode(huge); }), Status::kOk);
  Bytes zero_step = b;
  std::fill(zero_step.begin() + 13, zero_step.begin() + 21, 0);
  EXPECT_EQ(status_of([&] { commit::ScheduleEntry::decode(zero_step); }), Status::kInvalidArgument);
}

TEST(Schedule, EpochPermutationsAreUniformPermutations) {
  const auto p = commit::epoch_permutation(7, 0, 1000);
  EXPECT_EQ(std::set<uint64_t>(p.begin(), p.end()).size(), 1000u);
  EXPECT_EQ(p, commit::epoch_permutation(7, 0, 1000));
  EXPECT_NE(p, commit::epoch_permutation(7, 1, 1000));
  EXPECT_NE(p, commit::epoch_permutation(8, 0, 1000));
  // All 6 orders of 3 elements, 6000 epochs: chi-square < 20.52 (0.999, 5 dof).
  std::map<std::vector<uint64_t>, double> count;
  for (uint64_t e = 0; e < 6000; ++e) count[commit::epoch_permutation(1, e, 3)]++;
  ASSERT_EQ(count.size(), 6u);
  double chi2 = 0;
  for (const auto &[perm, c] : count) chi2 += (c - 1000) * (c - 1000) / 1000;
  EXPECT_LT(chi2, 20.52);
}

TEST(Schedule, SeededEntriesRootAndEpochBoundaries) {
  // 10 samples, batches of 4 in 2 micro-batches: step 3 takes stream positions
  // 8..11, the last two of epoch 0 and the first two of epoch 1.
  const auto e0 = commit::epoch_permutation(99, 0, 10), e1 = commit::epoch_permutation(99, 1, 10);
  const auto s3 = commit::seeded_schedule_entry(99, 10, 4, 2, 3);
  EXPECT_EQ(s3.micro, (std::vector<std::vector<uint64_t>>{{e0[8], e0[9]}, {e1[0], e1[1]}}));
  hash::Accumulator acc;
  for (uint64_t t = 1; t <= 7; ++t) acc.push_leaf(hash::leaf_hash(commit::seeded_schedule_entry(99, 10, 4, 2, t).encode(10)));
  EXPECT_EQ(commit::seeded_schedule_root(99, 10, 4, 2, 7), acc.root());
  EXPECT_EQ(status_of([] { commit::seeded_schedule_entry(1, 10, 4, 3, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { commit::seeded_schedule_entry(1, 0, 4, 1, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { commit::seeded_schedule_entry(1, 10, 4, 1, 0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([] { commit::seeded_schedule_entry(1, uint64_t{1} << 40, 4, 1, 1); }), Status::kLimit);
}

TEST(Commitment, CanonicalRunIdRulesAndStrictDecode) {
  const nlohmann::json j = {{"task_id", std::string(64, 'e')}, {"initial_state_digest", std::string(64, 'a')},
                            {"schedule_root", std::string(64, 'b')}, {"dataset_root", std::string(64, 'c')}, {"dataset_size", 5000},
                            {"spec_digest", std::string(64, 'd')}, {"declared_steps", 200}, {"miner_identity", "6d696e6572"}};
  const auto c = commit::TrainingCommitment::from_json(j);
  const Bytes b = c.encode();
  const auto back = commit::TrainingCommitment::decode(b);
  EXPECT_EQ(back.run_id(), c.run_id());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(c.to_json()["protocol_version"], 2);
  EXPECT_EQ(c.to_json()["task_id"], std::string(64, 'e'));
  auto broken = [&](const char *key, nlohmann::json v) {
    nlohmann::json k = j;
    k[key] = v;
    return status_of([&] { commit::TrainingCommitment::from_json(k); });
  };
  EXPECT_EQ(broken("declared_steps", 0), Status::kInvalidArgument);
  EXPECT_EQ(broken("dataset_size", 0), Status::kInvalidArgument);
  EXPECT_EQ(broken("miner_identity", ""), Status::kInvalidArgument);
  EXPECT_EQ(broken("miner_identity", std::string(514, 'a')), Status::kInvalidArgument);
  EXPECT_EQ(broken("protocol_version", 1), Status::kUnsupported);
  EXPECT_EQ(broken("protocol_version", 3), Status::kUnsupported);
  EXPECT_EQ(broken("task_id", "ab"), Status::kInvalidArgument);
  EXPECT_EQ(broken("spec_digest", "abc"), Status::kInvalidArgument);
  EXPECT_EQ(broken("extra", 1), Status::kInvalidArgument);
  Bytes extra = b;
  extra.push_back(0x50);  // field 10, varint
  extra.push_back(1);
  EXPECT_EQ(status_of([&] { commit::TrainingCommitment::decode(extra); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::TrainingCommitment::decode(Bytes(2000)); }), Status::kLimit);
  EXPECT_EQ(status_of([&] { commit::TrainingCommitment::decode(ByteView(b).first(10)); }), Status::kMalformed);
  // A version 1 commitment (field 4 was schedule_length, a varint) is
  // refused naming its version, not misread as version 2.
  const Bytes v1 = {0x08, 0x01, 0x12, 0x20};
  Bytes old = v1;
  for (int i = 0; i < 32; ++i) old.push_back(0xaa);
  old.push_back(0x20);
  old.push_back(200);
  old.push_back(1);
  try {
    commit::TrainingCommitment::decode(old);
    ADD_FAILURE() << "a version 1 commitment decoded";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("protocol version 1"), std::string::npos) << e.what();
  }
  // Any change moves the run id.
  auto other = c;
  other.miner_identity.push_back(0);
  EXPECT_NE(other.run_id(), c.run_id());
  auto other_task = c;
  other_task.task_id.bytes[0] ^= 1;
  EXPECT_NE(other_task.run_id(), c.run_id());
}
