// Openings: a small real run (samples, a seeded schedule, states written as
// safetensors files, a log of step leaves) opened at several steps, then
// every check made to fail by its own tampering.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include <fstream>
#include <limits>
#include <tuple>

#include "commit/dataset.h"
#include "commit/opening.h"
#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "data/stream_files.h"
#include "hash/finite.h"
#include "hash/safetensors.h"
#include "hash/update_norm.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "statecheck/state_stats.h"
#include "test_util.h"

using namespace pot;
using commit::OpeningCheck;
using hash::Digest;

namespace {

ByteView view_of(const std::vector<float> &v) {
  return ByteView(reinterpret_cast<const uint8_t *>(v.data()), v.size() * sizeof(float));
}

// A run of kSteps steps over kSamples samples, batches of 4 in 2 micro-batches.
struct TinyRun {
  static constexpr uint64_t kSamples = 12, kSteps = 8, kSeed = 5;
  static constexpr uint32_t kBatch = 4, kMicro = 2;
  test::TempDir dir;
  std::vector<Bytes> samples;
  std::unique_ptr<merkle::StoredTree> dataset = merkle::StoredTree::in_memory();
  std::unique_ptr<merkle::StoredTree> schedule = merkle::StoredTree::in_memory();
  std::unique_ptr<merkle::StoredTree> log = merkle::StoredTree::in_memory();
  std::vector<Digest> states;  // digest of S_0..S_n
  std::vector<Digest> stats;   // digest of S_t's statistics table (PROTOCOL 5.2), as leaf t commits it
  std::vector<Bytes> tables;   // the table leaf t commits (tables[0]: S_0's, committed by no leaf)
  std::vector<double> losses;  // losses[t] of step t (losses[0] unused)
  std::vector<double> norms;   // norms[t]: the update norm leaf t commits (norms[0] unused)
  commit::TrainingCommitment commitment;
  uint64_t n = kSamples;                     // the dataset size
  mutable std::optional<data::StreamFiles> stream;  // a token-stream dataset (PROTOCOL.md 15.1); reads files

  std::string state_path(uint64_t t) const { return dir.file("state-" + std::to_string(t) + ".safetensors"); }

  // A run whose S_{nan_at} holds a NaN (`poison` when given; its leaves commit the norms of the
  // run without it), whose step inf_loss_at has an infinite loss and whose
  // leaf norm_at commits the update norm norm_value (0: none), committed in
  // the log like any other value.
  // With `streamed`, the dataset is a token stream of two shards (20,000 and
  // 2,100 U16 tokens, windows of 40: 22,022 windows, a window proof carrying
  // subtree hashes on both sides in the 10-chunk shard).
  explicit TinyRun(uint64_t nan_at = 0, uint64_t inf_loss_at = 0, uint64_t norm_at = 0, double norm_value = 0,
                   bool streamed = false, uint64_t size_claimed = 0,
                   float poison = std::numeric_limits<float>::quiet_NaN(), uint64_t stats_lie_at = 0,
                   uint64_t jump_at = 0) {
    if (streamed) {
      data::StreamDataset d;
      d.window = 40;
      d.views = {{"x", 0, 39}, {"y", 1, 39}};
      std::vector<std::string> paths;
      for (uint64_t tokens : {20000, 2100}) {
        std::vector<uint16_t> b(tokens);  // little-endian on the machines pot runs on
        for (uint64_t i = 0; i < tokens; ++i) b[i] = static_cast<uint16_t>((i * 7919 + tokens) % 50257);
        paths.push_back(dir.file("shard-" + std::to_string(paths.size()) + ".bin"));
        std::ofstream(paths.back(), std::ios::binary).write(reinterpret_cast<const char *>(b.data()),
                                                            static_cast<std::streamsize>(tokens * 2));
        d.shards.push_back({tokens, data::shard_root_file(paths.back(), 2).first});
      }
      n = d.size();
      commitment.dataset_root = d.root();
      stream.emplace(d, paths);
    }
    for (uint64_t i = 0; i < (streamed ? 0 : kSamples); ++i) {
      const std::vector<float> x = {float(i), float(i) * 2, 1.0f};
      const std::string p = dir.file("sample-" + std::to_string(i));
      hash::write_safetensors(p, {{{"x", hash::DType::kF32, {3}}, view_of(x)}}, {});
      samples.push_back(test::read_file(p));
      dataset->append(commit::sample_digest(samples.back()).view());
    }
    std::vector<float> w = {0.5f, -0.25f, 1.0f, 2.0f};
    for (uint64_t t = 0; t <= kSteps; ++t) {
      const std::vector<float> before = w;
      if (t > 0) {
        schedule->append(commit::seeded_schedule_entry(kSeed, n, kBatch, kMicro, t).encode(n));
        for (float &x : w) x = x * 0.9f + 0.01f * float(t);
        if (t == jump_at) w[1] *= 1e6f;  // a state honest training does not reach in one step
      }
      std::vector<float> stored = w;
      if (t == nan_at && t > 0) stored[2] = poison;
      const hash::TensorMeta meta{"param/w", hash::DType::kF32, {4}};
      hash::write_safetensors(state_path(t), {{meta, view_of(stored)}}, {});
      states.push_back(hash::SafetensorsFile::open(state_path(t))->digest(1));
      tables.push_back(statecheck::state_stats(*hash::SafetensorsFile::open(state_path(t)), 1).encode());
      if (t > 0 && t == stats_lie_at) {  // the table of another state: the flags it gives are not S_t's
        std::vector<float> other = stored;
        if (t == jump_at)
          other[1] /= 1e6f;  // the table the state would have without the jump
        else
          for (float &x : other) x *= 0.5f;
        tables[t] = statecheck::state_stats(std::vector<hash::StTensor>{{meta, view_of(other)}}, 1).encode();
      }
      stats.push_back(statecheck::table_digest(tables[t]));
      losses.push_back(t == inf_loss_at ? std::numeric_limits<double>::infinity() : 1.0 / double(t));
      norms.push_back(t == 0 ? 0.0 : hash::update_norm({{meta, view_of(before)}}, {{meta, view_of(w)}}, "param/"));
      if (t > 0 && t == norm_at) norms[t] = norm_value;
    }
    commitment.initial_state_digest = states[0];
    commitment.schedule_root = schedule->root();
    commitment.task_id = hash::sha256("task", 4);
    if (!stream) commitment.dataset_root = dataset->root();
    commitment.dataset_size = size_claimed ? size_claimed : n;
    commitment.spec_digest = hash::sha256("spec", 4);
    commitment.declared_steps = kSteps;
    commitment.miner_identity = {1, 2, 3};
    for (uint64_t t = 1; t <= kSteps; ++t) log->append(leaf(t).encode());
  }

  commit::StepLeaf leaf(uint64_t t) const {
    commit::StepLeaf l{commitment.run_id(), t, states[t], losses[t], norms[t]};
    l.stats_digest = stats[t];
    return l;
  }

  commit::OpeningManifest open(uint64_t t) const {
    commit::OpeningManifest m;
    m.run_id = commitment.run_id();
    m.step = t;
    m.log_size = log->size();
    m.pre_state_digest = states[t - 1];
    if (t > 1) {
      m.pre_leaf = leaf(t - 1).encode();
      m.pre_leaf_proof = merkle::encode_proof(log->inclusion_proof(t - 2, log->size()));
    }
    m.post_leaf = leaf(t).encode();
    m.post_leaf_proof = merkle::encode_proof(log->inclusion_proof(t - 1, log->size()));
    const auto entry = commit::seeded_schedule_entry(kSeed, n, kBatch, kMicro, t);
    m.schedule_entry = entry.encode(n);
    m.schedule_proof = merkle::encode_proof(schedule->inclusion_proof(t - 1, kSteps));
    if (stream) m.stream = stream->dataset().encode();
    for (uint64_t i : entry.indices()) {
      if (stream)
        m.samples.push_back({i, {}, {}, stream->prove(i).encode()});
      else
        m.samples.push_back({i, samples[i], merkle::encode_proof(dataset->inclusion_proof(i, kSamples)), {}});
    }
    m.pre_state_ref = state_path(t - 1);
    for (uint64_t i = 1; i <= log->size(); ++i) {
      const Bytes l = leaf(i).encode();
      m.run_leaves.insert(m.run_leaves.end(), l.begin(), l.end());
      m.run_tables.push_back(tables[i]);
    }
    m.flagged_steps = commit::flagged_steps(m.run_tables);
    return m;
  }

  commit::OpeningResult verify(const commit::OpeningManifest &m, std::optional<std::string> pre = std::nullopt,
                               std::optional<std::string> post = std::nullopt,
                               std::optional<std::vector<uint64_t>> sealed = std::nullopt) const {
    return commit::verify_opening(commitment, m.step, log->size(), log->root(), m.encode(), pre, post, 1, sealed);
  }
};

}  // namespace

TEST(Opening, HonestOpeningsPassAtEveryStep) {
  TinyRun run;
  for (uint64_t t = 1; t <= TinyRun::kSteps; ++t) {
    const auto m = run.open(t);
    const auto r = run.verify(m, run.state_path(t - 1), run.state_path(t));
    EXPECT_EQ(r.check, OpeningCheck::kOk) << "step " << t << ": " << r.message;
    EXPECT_EQ(r.batch.size(), TinyRun::kBatch);
    EXPECT_EQ(r.post_state_digest, run.states[t]);
    EXPECT_EQ(commit::OpeningManifest::decode(m.encode()).digest(), m.digest());
  }
}

// Round 3, attack 1: a forger hides the flags of the step that poisoned
// its state by committing the table of an unpoisoned one. Every verifier
// that reads S_4 (as S_{t-1} of step 5, or S_t of step 4) fails it.
TEST(Opening, ALeafCommittingAStatisticsTableItsStateDoesNotGiveFails) {
  TinyRun run(0, 0, 0, 0, false, 0, std::numeric_limits<float>::quiet_NaN(), 4);
  auto r = run.verify(run.open(5), run.state_path(4), run.state_path(5));
  EXPECT_EQ(r.check, OpeningCheck::kStateStats) << r.message;
  EXPECT_EQ(r.status, Status::kProofMismatch);
  EXPECT_NE(r.message.find("the statistics table of S_4 digests to"), std::string::npos) << r.message;
  r = run.verify(run.open(4), run.state_path(3), run.state_path(4));
  EXPECT_EQ(r.check, OpeningCheck::kStateStats) << r.message;
  // The steps whose states are other ones pass; so does an opening whose
  // states are not served (the replay checks S_t's table).
  EXPECT_EQ(run.verify(run.open(3), run.state_path(2), run.state_path(3)).check, OpeningCheck::kOk);
  EXPECT_EQ(run.verify(run.open(6), run.state_path(5), run.state_path(6)).check, OpeningCheck::kOk);
  EXPECT_EQ(run.verify(run.open(5)).check, OpeningCheck::kOk);
  EXPECT_STREQ(commit::opening_check_name(OpeningCheck::kStateStats), "state_stats");
}

// Round 3, attack 1: the step that poisons a state is flagged by its tables,
// and every opening of the run carries all of them (check 32), so the
// miner cannot hide the flag from the ledger (the run seals with its
// flagged steps, each challenged for certain) nor from any committee.
// What the run record adds to a manifest is what the recorder's early
// refusal computes (run_record_bytes), byte for byte, for tables of one and
// of two-byte length prefixes; the most steps that fit is the bound's edge.
TEST(Opening, TheRunRecordsSizeIsComputedBeforeTheRun) {
  TinyRun run;
  commit::OpeningManifest m = run.open(3);
  const size_t with = m.encode().size();
  const size_t table = m.run_tables.front().size();
  const uint64_t steps = m.run_tables.size();
  m.run_leaves.clear();
  m.run_tables.clear();
  m.flagged_steps.clear();
  EXPECT_EQ(with - m.encode().size(), commit::run_record_bytes(steps, table));
  for (uint64_t t : {uint64_t{1}, uint64_t{100}, uint64_t{200}}) {
    const uint64_t most = commit::max_recorded_steps(t);
    EXPECT_LE(commit::run_record_bytes(most, t), commit::kMaxManifestBytes);
    EXPECT_GT(commit::run_record_bytes(most + 1, t), commit::kMaxManifestBytes);
  }
  EXPECT_EQ(commit::run_record_bytes(UINT64_MAX, 10), UINT64_MAX);  // saturates
  EXPECT_EQ(commit::run_record_bytes(10, UINT64_MAX - 5), UINT64_MAX);
}

TEST(Opening, EveryOpeningCarriesTheRunsFlagsAndTheLedgersMustBeThem) {
  constexpr uint64_t kJump = 5;
  TinyRun run(0, 0, 0, 0, false, 0, std::numeric_limits<float>::quiet_NaN(), 0, kJump);
  const std::vector<uint64_t> flagged{kJump};
  for (uint64_t t = 1; t <= TinyRun::kSteps; ++t) {
    const auto m = run.open(t);
    EXPECT_EQ(m.flagged_steps, flagged);
    const auto r = run.verify(m, run.state_path(t - 1), run.state_path(t), flagged);
    EXPECT_EQ(r.check, OpeningCheck::kOk) << "step " << t << ": " << r.message;
  }
  // The honest run flags nothing, and seals with nothing.
  TinyRun honest;
  EXPECT_TRUE(honest.open(3).flagged_steps.empty());
  EXPECT_EQ(honest.verify(honest.open(3), std::nullopt, std::nullopt, std::vector<uint64_t>{}).check, OpeningCheck::kOk);
  auto expect = [&](const TinyRun &r, const commit::OpeningManifest &m, Status status, const std::string &says,
                    std::optional<std::vector<uint64_t>> sealed = std::nullopt) {
    const auto v = r.verify(m, std::nullopt, std::nullopt, sealed);
    EXPECT_EQ(v.check, OpeningCheck::kRunFlags) << v.message;
    EXPECT_EQ(v.status, status) << v.message;
    EXPECT_NE(v.message.find(says), std::string::npos) << v.message;
  };
  // The miner lists no flag: every opening fails, whichever step is drawn.
  for (uint64_t t : {1, 3, 8}) {
    auto m = run.open(t);
    m.flagged_steps.clear();
    expect(run, m, Status::kProofMismatch, "the run's tables flag steps 5, the manifest lists none");
  }
  // It lists the flag but sealed without it on the ledger: the step would
  // not be challenged for certain.
  expect(run, run.open(2), Status::kProofMismatch, "the run sealed on the ledger with none",
         std::vector<uint64_t>{});
  // A ledger naming a step the tables do not flag is not the run's either.
  expect(honest, honest.open(2), Status::kProofMismatch, "the run sealed on the ledger with 4",
         std::vector<uint64_t>{4});
  // A table that is not the one its leaf commits, a record of another
  // length, a leaf that is not the posted log's, a pot 0.2 manifest.
  auto m = run.open(3);
  m.run_tables[kJump - 1] = m.run_tables[kJump - 2];
  expect(run, m, Status::kProofMismatch, "the run record's table of S_5 digests to");
  m = run.open(3);
  m.run_tables.pop_back();
  expect(run, m, Status::kMalformed, "holds 7 statistics tables, the posted log commits 8");
  m = run.open(3);
  m.run_leaves.resize(m.run_leaves.size() - 1);
  expect(run, m, Status::kMalformed, "bytes of leaves");
  m = run.open(3);
  {
    commit::StepLeaf other = run.leaf(6);
    other.loss = 0.5;
    const Bytes b = other.encode();
    std::copy(b.begin(), b.end(), m.run_leaves.begin() + 5 * commit::StepLeaf::kSize);
  }
  expect(run, m, Status::kProofMismatch, "the run record's leaves hash to");
  m = run.open(3);
  std::swap(m.run_tables[0], m.run_tables[1]);
  std::copy_n(run.open(3).run_leaves.begin() + commit::StepLeaf::kSize, commit::StepLeaf::kSize,
              m.run_leaves.begin());
  expect(run, m, Status::kProofMismatch, "run record, leaf 1 names step 2");
  m = run.open(3);
  m.run_leaves.clear();
  m.run_tables.clear();
  m.flagged_steps.clear();
  expect(run, m, Status::kUnsupported, "a manifest of pot 0.2");
  EXPECT_STREQ(commit::opening_check_name(OpeningCheck::kRunFlags), "run_flags");
}

// A miner that commits a made-up table for the poisoning step (one without
// the jump) moves the flag to the next step, whose opening serves the
// poisoned S_5 and fails check 31 against leaf 5's made-up table.
TEST(Opening, AMadeUpTableMovesTheFlagToAStepThatExposesIt) {
  TinyRun run(0, 0, 0, 0, false, 0, std::numeric_limits<float>::quiet_NaN(), 5, 5);
  const auto m = run.open(6);
  EXPECT_EQ(m.flagged_steps, std::vector<uint64_t>{6});
  const auto r = run.verify(m, run.state_path(5), run.state_path(6), m.flagged_steps);
  EXPECT_EQ(r.check, OpeningCheck::kStateStats) << r.message;
  EXPECT_NE(r.message.find("the statistics table of S_5 digests to"), std::string::npos) << r.message;
}

TEST(Opening, EachTamperingIsNamedByItsCheck) {
  TinyRun run;
  auto expect = [&](const commit::OpeningManifest &m, OpeningCheck want, std::optional<std::string> pre = std::nullopt,
                    std::optional<std::string> post = std::nullopt) {
    const auto r = run.verify(m, pre, post);
    EXPECT_EQ(r.check, want) << r.message;
    EXPECT_NE(r.status, Status::kOk);
    EXPECT_EQ(r.message.rfind(commit::opening_check_name(want), 0), 0u) << r.message;
  };
  const auto base = run.open(5);
  {
    auto m = base;
    m.run_id = hash::sha256("other", 5);
    expect(m, OpeningCheck::kRunId);
  }
  {
    auto m = base;
    m.step = TinyRun::kSteps + 1;
    expect(m, OpeningCheck::kStep);
  }
  {
    auto m = base;
    m.log_size = 7;
    expect(m, OpeningCheck::kLogSize);
  }
  {
    auto m = base;  // leaf of step 6 served as leaf t
    m.post_leaf = run.leaf(6).encode();
    expect(m, OpeningCheck::kPostLeaf);
  }
  {
    auto m = base;  // the leaf of another run's step 5 (a copied trajectory)
    commit::StepLeaf l = run.leaf(5);
    l.run_id = hash::sha256("other", 5);
    m.post_leaf = l.encode();
    expect(m, OpeningCheck::kPostLeaf);
    EXPECT_NE(run.verify(m).message.find("is a step of run"), std::string::npos);
  }
  {
    auto m = base;  // a forged result: right step, another state digest
    commit::StepLeaf l = run.leaf(5);
    l.state_digest = hash::sha256("forged", 6);
    m.post_leaf = l.encode();
    expect(m, OpeningCheck::kPostLeafProof);
  }
  {
    auto m = base;  // a committed norm rewritten after the root was posted
    commit::StepLeaf l = run.leaf(5);
    l.update_norm *= 2;
    m.post_leaf = l.encode();
    expect(m, OpeningCheck::kPostLeafProof);
  }
  {
    auto m = run.open(1);  // another run's initial state
    m.pre_state_digest = hash::sha256("pretrained", 10);
    expect(m, OpeningCheck::kPreStateCommitted);
  }
  {
    auto m = base;  // a substituted pre-state
    m.pre_state_digest = hash::sha256("pretrained", 10);
    expect(m, OpeningCheck::kPreLeaf);
  }
  {
    auto m = base;
    commit::StepLeaf l = run.leaf(4);
    l.state_digest = m.pre_state_digest = hash::sha256("pretrained", 10);
    m.pre_leaf = l.encode();
    expect(m, OpeningCheck::kPreLeafProof);
  }
  {
    auto m = base;  // leaf t-1 of another run
    commit::StepLeaf l = run.leaf(4);
    l.run_id = hash::sha256("other", 5);
    m.pre_leaf = l.encode();
    expect(m, OpeningCheck::kPreLeaf);
  }
  {
    auto m = base;  // the batch of another step
    m.schedule_entry = commit::seeded_schedule_entry(TinyRun::kSeed, TinyRun::kSamples, TinyRun::kBatch, TinyRun::kMicro, 6)
                           .encode();
    expect(m, OpeningCheck::kScheduleEntry);
  }
  {
    auto m = base;  // a different batch claimed for this step
    m.schedule_entry = commit::ScheduleEntry{5, {{0, 1}, {2, 3}}}.encode();
    expect(m, OpeningCheck::kScheduleProof);
  }
  {
    auto m = base;
    m.samples.pop_back();
    expect(m, OpeningCheck::kSampleCount);
  }
  {
    auto m = base;
    std::swap(m.samples[0], m.samples[1]);
    expect(m, OpeningCheck::kSampleIndex);
  }
  {
    auto m = base;
    m.samples[2].payload.resize(5);
    expect(m, OpeningCheck::kSamplePayload);
  }
  {
    auto m = base;  // trained on different data than committed
    m.samples[1].payload = run.samples[(m.samples[1].index + 1) % TinyRun::kSamples];
    expect(m, OpeningCheck::kSampleProof);
  }
  expect(base, OpeningCheck::kPreStateDigest, run.state_path(3));      // the wrong state file served
  expect(base, OpeningCheck::kPostStateDigest, run.state_path(4), run.state_path(6));
  expect(base, OpeningCheck::kPreStateDigest, run.dir.file("missing"));  // nothing served
  const auto r = commit::verify_opening(run.commitment, 5, run.log->size(), run.log->root(), Bytes{1, 2, 3}, {}, {});
  EXPECT_EQ(r.check, OpeningCheck::kManifest);
  // A valid opening of step 2 does not answer a challenge of step 5.
  const auto wrong_step = commit::verify_opening(run.commitment, 5, run.log->size(), run.log->root(), run.open(2).encode(),
                                                 run.state_path(1), run.state_path(2), 1);
  EXPECT_EQ(wrong_step.check, OpeningCheck::kStep) << wrong_step.message;
  EXPECT_EQ(r.check, OpeningCheck::kManifest);
}

TEST(Opening, StreamWindowsOpenAndVerify) {
  TinyRun run(0, 0, 0, 0, true);
  ASSERT_EQ(run.n, (20000 - 39) + (2100 - 39));
  size_t with_left = 0, with_right = 0;
  for (uint64_t t = 1; t <= TinyRun::kSteps; ++t) {
    const auto m = run.open(t);
    const auto r = run.verify(m, run.state_path(t - 1), run.state_path(t));
    ASSERT_EQ(r.check, OpeningCheck::kOk) << "step " << t << ": " << r.message;
    ASSERT_EQ(r.manifest.samples.size(), TinyRun::kBatch);
    for (size_t i = 0; i < TinyRun::kBatch; ++i) {
      // The verifier rebuilt each sample from its proven window: the bytes
      // the miner trains on.
      const uint64_t idx = r.batch[i];
      EXPECT_EQ(r.manifest.samples[i].payload, run.stream->sample(idx));
      EXPECT_EQ(r.sample_digests[i], commit::sample_digest(run.stream->sample(idx)));
      const data::WindowCover cv = data::window_cover(run.stream->dataset(), idx);
      with_left += cv.a > 0;
      with_right += cv.c < cv.m;
    }
    EXPECT_EQ(commit::OpeningManifest::decode(m.encode()).digest(), m.digest());
  }
  EXPECT_GT(with_left, 0u);
  EXPECT_GT(with_right, 0u);
}

// What a miner who trained on other tokens, or a forger, can serve for a
// stream dataset, and the check that names it.
TEST(Opening, StreamTamperingIsNamed) {
  TinyRun run(0, 0, 0, 0, true);
  const auto base = run.open(3);
  auto expect = [&](const commit::OpeningManifest &m, OpeningCheck check, Status status, const std::string &says) {
    const auto r = run.verify(m);
    EXPECT_EQ(r.check, check) << r.message;
    EXPECT_EQ(r.status, status) << r.message;
    EXPECT_NE(r.message.find(says), std::string::npos) << r.message;
  };
  ASSERT_EQ(run.verify(base).check, OpeningCheck::kOk);
  {
    auto m = base;  // another window's (valid) proof for the scheduled index
    m.samples[0].window = run.stream->prove((m.samples[0].index + 1) % run.n).encode();
    expect(m, OpeningCheck::kSampleProof, Status::kProofMismatch, "the proof is of window");
  }
  {
    auto m = base;  // other tokens in the window (a byte of its chunks changed)
    auto p = data::WindowProof::decode(m.samples[1].window);
    p.chunks[p.chunks.size() / 2] ^= 1;
    m.samples[1].window = p.encode();
    expect(m, OpeningCheck::kSampleProof, Status::kProofMismatch, "the dataset commits to");
  }
  {
    auto m = base;  // a subtree hash dropped
    auto p = data::WindowProof::decode(m.samples[0].window);
    ASSERT_FALSE(p.hashes.empty());
    p.hashes.pop_back();
    m.samples[0].window = p.encode();
    expect(m, OpeningCheck::kSampleProof, Status::kProofLength, "hashes");
  }
  {
    // The same token files read another way (y = x: no next-token shift):
    // another descriptor, so another root.
    auto m = base;
    data::StreamDataset d = run.stream->dataset();
    d.views = {{"x", 0, 39}, {"y", 0, 39}};
    m.stream = d.encode();
    expect(m, OpeningCheck::kSampleProof, Status::kProofMismatch, "the stream descriptor hashes to");
  }
  {
    auto m = base;  // a descriptor of another version
    m.stream[0] = 2;
    expect(m, OpeningCheck::kSampleProof, Status::kUnsupported, "version 2");
  }
  {
    auto m = base;  // windows without the descriptor they are proven against
    m.stream.clear();
    expect(m, OpeningCheck::kSamplePayload, Status::kMalformed, "no stream descriptor");
  }
  {
    auto m = base;  // a payload of the miner's choosing beside the window
    m.samples[2].payload = run.stream->sample(0);
    expect(m, OpeningCheck::kSamplePayload, Status::kMalformed, "window proof only");
  }
  {
    auto m = base;  // a sample with neither payload nor window is no canonical element
    m.samples[2].window.clear();
    expect(m, OpeningCheck::kManifest, Status::kMalformed, "field 11");
  }
  {
    auto m = base;  // a truncated proof record
    m.samples[3].window.resize(m.samples[3].window.size() - 1);
    expect(m, OpeningCheck::kSampleProof, Status::kMalformed, "sample 3");
  }
  // A commitment whose dataset size is not the descriptor's window count.
  TinyRun wrong_size(0, 0, 0, 0, true, (20000 - 39) + (2100 - 39) - 1);
  const auto r = wrong_size.verify(wrong_size.open(2));
  EXPECT_EQ(r.check, OpeningCheck::kSampleProof) << r.message;
  EXPECT_NE(r.message.find("windows, the committed dataset size is"), std::string::npos) << r.message;
}

TEST(Opening, NonFiniteLossesAndStatesFail) {
  // NaN in the committed S_3: the opening of step 4 serves it as S_{t-1},
  // the opening of step 3 as S_t (norm-bucket path); every other check passes.
  TinyRun nan(3);
  for (const auto &[t, pre, post] : {std::tuple{4u, true, false}, std::tuple{3u, false, true}}) {
    const auto m = nan.open(t);
    const auto r = nan.verify(m, pre || post ? std::optional(nan.state_path(t - 1)) : std::nullopt,
                              post ? std::optional(nan.state_path(t)) : std::nullopt);
    EXPECT_EQ(r.check, OpeningCheck::kNonFinite) << r.message;
    EXPECT_EQ(r.status, Status::kNonFinite);
    EXPECT_NE(r.message.find("tensor 'param/w' element 2 is NaN"), std::string::npos) << r.message;
  }
  // Without the state files only the manifest's values are checked.
  EXPECT_EQ(nan.verify(nan.open(4)).check, OpeningCheck::kOk);
  // An infinite committed loss fails even without the states.
  TinyRun inf(0, 5);
  const auto r = inf.verify(inf.open(5));
  EXPECT_EQ(r.check, OpeningCheck::kNonFinite) << r.message;
  EXPECT_NE(r.message.find("loss inf"), std::string::npos) << r.message;
  EXPECT_EQ(inf.verify(inf.open(6)).check, OpeningCheck::kOk);  // the leaf of step 5 is only S_5's binding there
  // So does a non-finite committed update norm.
  TinyRun nan_norm(0, 0, 5, std::numeric_limits<double>::quiet_NaN());
  const auto n = nan_norm.verify(nan_norm.open(5));
  EXPECT_EQ(n.check, OpeningCheck::kNonFinite) << n.message;
  EXPECT_NE(n.message.find("commits to the update norm nan"), std::string::npos) << n.message;
}

TEST(Opening, SubnormalStatesFailBeforeAnyReplay) {
  // Round 3, attack 7: a committed S_3 whose weight is subnormal (1e-40)
  // would make the replay of step 4 many times slower on CPUs that take an
  // assist per subnormal operand, at no cost to its forger. Served as
  // S_{t-1} (step 4) or as S_t (step 3, norm-bucket path) it fails check
  // subnormal before any replay, blaming the miner who committed it.
  TinyRun sub(3, 0, 0, 0, false, 0, -1e-40f);
  for (const auto &[t, pre, post] : {std::tuple{4u, true, false}, std::tuple{3u, false, true}}) {
    const auto m = sub.open(t);
    const auto r = sub.verify(m, sub.state_path(t - 1), post ? std::optional(sub.state_path(t)) : std::nullopt);
    EXPECT_EQ(r.check, OpeningCheck::kSubnormal) << r.message;
    EXPECT_EQ(r.status, Status::kInvalidArgument);
    EXPECT_NE(r.message.find("served S_3: 1 subnormal parameter values of 4 (tensor 'param/w' first); at most 1 in "
                             "4096 is allowed"),
              std::string::npos)
        << r.message;
  }
  // The honest run of the same shape passes with both states served; the
  // smallest normal F32 in the same place passes check subnormal.
  TinyRun honest;
  for (uint64_t t = 1; t <= TinyRun::kSteps; ++t)
    EXPECT_EQ(honest.verify(honest.open(t), honest.state_path(t - 1), honest.state_path(t)).check, OpeningCheck::kOk);
  TinyRun normal(3, 0, 0, 0, false, 0, -std::numeric_limits<float>::min());
  EXPECT_EQ(normal.verify(normal.open(4), normal.state_path(3)).check, OpeningCheck::kOk);
}

TEST(Finite, SubnormalCensusAndItsBounds) {
  using hash::DType;
  const auto f32 = test::f32_bytes;
  const float tiny = std::numeric_limits<float>::denorm_min(), lowest_normal = std::numeric_limits<float>::min();
  EXPECT_EQ(hash::count_subnormal(DType::kF32, f32({0.0f, -0.0f, lowest_normal, -lowest_normal, 1.0f})), 0u);
  EXPECT_EQ(hash::count_subnormal(DType::kF32, f32({tiny, -tiny, lowest_normal / 2, 1e-30f})), 3u);
  const double dsub = std::numeric_limits<double>::denorm_min();
  Bytes d(16);
  std::memcpy(d.data(), &dsub, 8);
  const double dmin = std::numeric_limits<double>::min();
  std::memcpy(d.data() + 8, &dmin, 8);
  EXPECT_EQ(hash::count_subnormal(DType::kF64, d), 1u);
  // BF16 0x0001 and 0x8040 are subnormal, 0x0080 the smallest normal; F16
  // (0x0001, subnormal) is not counted, nor integers.
  const Bytes bf16 = {0x01, 0x00, 0x40, 0x80, 0x80, 0x00, 0x00, 0x80};
  EXPECT_EQ(hash::count_subnormal(DType::kBF16, bf16), 2u);
  EXPECT_EQ(hash::count_subnormal(DType::kF16, bf16), 0u);
  EXPECT_EQ(hash::count_subnormal(DType::kI32, f32({tiny})), 0u);

  // The bounds: one parameter element in 4096, one other in 16.
  std::vector<float> params(8192, 0.5f), moments(32, 1e-3f);
  params[10] = params[20] = tiny;
  moments[1] = moments[2] = tiny;
  auto census = [&](size_t param_bad, size_t other_bad) {
    std::vector<float> p = params, m = moments;
    for (size_t i = 0; i < param_bad; ++i) p[100 + i] = -tiny;
    for (size_t i = 0; i < other_bad; ++i) m[10 + i] = tiny;
    return hash::subnormal_census(std::vector<hash::StTensor>{
        {{"optim/0/exp_avg", DType::kF32, {32}}, f32(m)}, {{"param/w", DType::kF32, {8192}}, f32(p)}});
  };
  const auto ok = census(0, 0);
  EXPECT_EQ(ok.param_elements, 8192u);
  EXPECT_EQ(ok.param_subnormal, 2u);
  EXPECT_EQ(ok.other_elements, 32u);
  EXPECT_EQ(ok.other_subnormal, 2u);
  EXPECT_EQ(hash::subnormal_excess(ok), std::nullopt);
  EXPECT_EQ(hash::subnormal_excess(census(1, 0)),
            "3 subnormal parameter values of 8192 (tensor 'param/w' first); at most 1 in 4096 is allowed");
  EXPECT_EQ(hash::subnormal_excess(census(0, 1)),
            "3 subnormal optimizer-state values of 32 (tensor 'optim/0/exp_avg' first); at most 1 in 16 is allowed");
}

TEST(Opening, CommittedNormIsTheServedStatesNorm) {
  // Honest: with both states served, leaf t's norm is theirs, bit for bit.
  TinyRun run;
  for (uint64_t t = 1; t <= TinyRun::kSteps; ++t) {
    const auto r = run.verify(run.open(t), run.state_path(t - 1), run.state_path(t));
    ASSERT_EQ(r.check, OpeningCheck::kOk) << r.message;
    EXPECT_EQ(std::bit_cast<uint64_t>(r.committed_update_norm), std::bit_cast<uint64_t>(run.norms[t]));
  }
  // A miner committing, at training time, a norm its states do not give (to
  // steer a cross-architecture comparison) fails check committed_norm once
  // S_t is served, even by one unit in the last place.
  for (double lie : {std::nextafter(run.norms[5], 1.0), 2 * run.norms[5], 0.0}) {
    TinyRun liar(0, 0, 5, lie);
    const auto r = liar.verify(liar.open(5), liar.state_path(4), liar.state_path(5));
    EXPECT_EQ(r.check, OpeningCheck::kCommittedNorm) << r.message;
    EXPECT_EQ(r.status, Status::kProofMismatch);
    EXPECT_NE(r.message.find("leaf 5 commits to the update norm"), std::string::npos) << r.message;
    // Served S_{t-1} alone cannot tell: the bitwise replay checks it
    // (pot_verify_step, tests/replay).
    EXPECT_EQ(liar.verify(liar.open(5), liar.state_path(4)).check, OpeningCheck::kOk);
    // Its other steps are unaffected.
    EXPECT_EQ(liar.verify(liar.open(6), liar.state_path(5), liar.state_path(6)).check, OpeningCheck::kOk);
  }
}

TEST(Finite, FirstNonFiniteElementByDtype) {
  auto bytes = [](auto... v) {
    Bytes b;
    for (auto x : {v...}) {
      const size_t n = sizeof(x);
      const auto *p = reinterpret_cast<const uint8_t *>(&x);
      b.insert(b.end(), p, p + n);
    }
    return b;
  };
  using hash::DType;
  const float f_nan = std::numeric_limits<float>::quiet_NaN(), f_inf = std::numeric_limits<float>::infinity();
  const double d_max = std::numeric_limits<double>::max(), d_inf = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(hash::first_nonfinite(DType::kF32, bytes(1.0f, -0.0f, 1e-45f, 3.4e38f)), std::nullopt);
  EXPECT_EQ(hash::first_nonfinite(DType::kF32, bytes(1.0f, f_nan)), 1u);
  EXPECT_EQ(hash::first_nonfinite(DType::kF32, bytes(f_inf, 1.0f)), 0u);
  EXPECT_EQ(hash::first_nonfinite(DType::kF64, bytes(d_max, 5e-324)), std::nullopt);
  EXPECT_EQ(hash::first_nonfinite(DType::kF64, bytes(0.0, 1.0, d_inf)), 2u);
  // F16: 0x7C00 +inf, 0xFC00 -inf, 0x7E00 NaN, 0x7BFF the largest finite.
  EXPECT_EQ(hash::first_nonfinite(DType::kF16, bytes(uint16_t{0x7BFF}, uint16_t{0x0001})), std::nullopt);
  EXPECT_EQ(hash::first_nonfinite(DType::kF16, bytes(uint16_t{0x3C00}, uint16_t{0xFC00})), 1u);
  EXPECT_EQ(hash::first_nonfinite(DType::kF16, bytes(uint16_t{0x7E00})), 0u);
  // BF16: 0x7F80 +inf, 0x7FC0 NaN, 0x7F7F the largest finite.
  EXPECT_EQ(hash::first_nonfinite(DType::kBF16, bytes(uint16_t{0x7F7F}, uint16_t{0x8001})), std::nullopt);
  EXPECT_EQ(hash::first_nonfinite(DType::kBF16, bytes(uint16_t{0x3F80}, uint16_t{0x7FC0})), 1u);
  // Integer and boolean tensors have no non-finite values, whatever the bits.
  EXPECT_EQ(hash::first_nonfinite(DType::kI32, bytes(int32_t{0x7F800000})), std::nullopt);
  EXPECT_EQ(hash::first_nonfinite(DType::kU8, Bytes{0xFF}), std::nullopt);
  // The message names the tensor, the element and what it holds.
  const Bytes neg = bytes(0.5f, -f_inf);
  EXPECT_EQ(hash::nonfinite_tensor(std::vector<hash::StTensor>{{{"param/w", DType::kF32, {2}}, neg}}),
            "tensor 'param/w' element 1 is -infinity");
}

TEST(Opening, ManifestDecodingIsStrictAndBounded) {
  TinyRun run;
  const Bytes b = run.open(3).encode();
  Bytes extra = b;
  extra.push_back(0x78);  // field 15, varint 1: unknown
  extra.push_back(1);
  EXPECT_EQ(test::status_of([&] { commit::OpeningManifest::decode(extra); }), Status::kMalformed);
  EXPECT_EQ(test::status_of([&] { commit::OpeningManifest::decode(ByteView(b).first(b.size() - 1)); }),
            Status::kMalformed);
  commit::OpeningManifest m = run.open(3);
  m.pre_state_ref = std::string(5000, 'x');
  EXPECT_EQ(test::status_of([&] { m.encode(); }), Status::kLimit);
}

TEST(Opening, AManifestCarryingNextLrIsRefused) {
  // Protocol 1 served the learning rate of S_t in field 14; in protocol 2 the
  // rates come from the spec's schedule and the field is reserved: a manifest
  // that carries one (as a miner choosing its own rates would send) is not
  // canonical.
  TinyRun run;
  Bytes b = run.open(3).encode();
  b.push_back(0x71);  // field 14, wire type 1 (64-bit)
  const double lr = 0.000375;
  uint8_t le[8];
  std::memcpy(le, &lr, 8);
  b.insert(b.end(), le, le + 8);
  EXPECT_EQ(test::status_of([&] { commit::OpeningManifest::decode(b); }), Status::kMalformed);
}

// A task whose windows rebuild large samples (8 views of 2^20 tokens as I64:
// 64 MiB each) and a step of 5 of them: a verifier would hold 320 MiB of
// samples that a 10 MiB manifest of window proofs asked for. Refused before
// any sample is rebuilt; 4 of them (256 MiB, what a manifest may carry)
// go on to the proofs.
TEST(Opening, StreamSamplesAreBoundedBeforeTheyAreRebuilt) {
  data::StreamDataset d;
  d.window = data::kMaxWindow;
  for (const char *name : {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"}) d.views.push_back({name, 0, data::kMaxWindow});
  d.shards = {{data::kMaxWindow + 9, hash::sha256("shard", 5)}};
  ASSERT_EQ(d.size(), 10u);
  for (const uint64_t batch : {5, 4}) {
    commit::ScheduleEntry entry{1, {{}}};
    for (uint64_t i = 0; i < batch; ++i) entry.micro[0].push_back(i);
    auto schedule = merkle::StoredTree::in_memory(), log = merkle::StoredTree::in_memory();
    schedule->append(entry.encode(d.size()));
    commit::TrainingCommitment c;
    c.initial_state_digest = hash::sha256("s0", 2);
    c.schedule_root = schedule->root();
    c.task_id = hash::sha256("task", 4);
    c.dataset_root = d.root();
    c.dataset_size = d.size();
    c.spec_digest = hash::sha256("spec", 4);
    c.declared_steps = 1;
    c.miner_identity = {1};
    const Bytes table = statecheck::StateStats{}.encode();
    const commit::StepLeaf leaf{c.run_id(), 1, hash::sha256("s1", 2), 1.0, 1.0, statecheck::table_digest(table)};
    log->append(leaf.encode());
    commit::OpeningManifest m;
    m.run_id = c.run_id();
    m.step = 1;
    m.log_size = 1;
    m.pre_state_digest = c.initial_state_digest;
    m.post_leaf = leaf.encode();
    m.post_leaf_proof = merkle::encode_proof(log->inclusion_proof(0, 1));
    m.schedule_entry = entry.encode(d.size());
    m.schedule_proof = merkle::encode_proof(schedule->inclusion_proof(0, 1));
    m.stream = d.encode();
    for (uint64_t i = 0; i < batch; ++i) m.samples.push_back({i, {}, {}, Bytes(32, 7)});
    m.run_leaves = leaf.encode();
    m.run_tables = {table};
    const auto r = commit::verify_opening(c, 1, 1, log->root(), m.encode(), std::nullopt, std::nullopt, 1);
    if (batch == 5) {
      EXPECT_EQ(r.check, OpeningCheck::kSamplePayload) << r.message;
      EXPECT_EQ(r.status, Status::kLimit) << r.message;
      EXPECT_NE(r.message.find("would rebuild 335544320 bytes"), std::string::npos) << r.message;
    } else {
      EXPECT_EQ(r.check, OpeningCheck::kSampleProof) << r.message;  // the bound holds; the fake proofs do not
    }
  }
}
