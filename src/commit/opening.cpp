#include "commit/opening.h"

#include <bit>
#include <cmath>
#include <map>
#include <optional>

#include "codec/canonical.h"
#include "commit/dataset.h"
#include "commit/step_leaf.h"
#include "common/error.h"
#include "common/heights.h"
#include "data/stream.h"
#include "hash/finite.h"
#include "hash/rfc6962.h"
#include "hash/safetensors.h"
#include "hash/state.h"
#include "hash/update_norm.h"
#include "merkle/proof.h"
#include "pot/v2/opening.pb.h"
#include "statecheck/state_flags.h"
#include "statecheck/state_stats.h"

namespace pot::commit {

namespace {

std::string as_string(ByteView b) { return std::string(b.begin(), b.end()); }
Bytes as_bytes(const std::string &s) { return Bytes(s.begin(), s.end()); }

// Thrown inside verify_opening to stop at the first failed check.
struct CheckFailed {
  OpeningCheck check;
  Status status;
  std::string message;
};

[[noreturn]] void failed(OpeningCheck c, Status s, std::string m) { throw CheckFailed{c, s, std::move(m)}; }

// Runs f; a pot::Error it throws becomes the failure of check c.
template <typename F>
auto under(OpeningCheck c, const char *what, F &&f) {
  try {
    return f();
  } catch (const Error &e) {
    failed(c, e.status(), fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace

const char *opening_check_name(OpeningCheck c) noexcept {
  switch (c) {
    case OpeningCheck::kOk: return "ok";
    case OpeningCheck::kManifest: return "manifest";
    case OpeningCheck::kRunId: return "run_id";
    case OpeningCheck::kStep: return "step";
    case OpeningCheck::kLogSize: return "log_size";
    case OpeningCheck::kPostLeaf: return "post_leaf";
    case OpeningCheck::kPostLeafProof: return "post_leaf_proof";
    case OpeningCheck::kPreStateCommitted: return "pre_state_committed";
    case OpeningCheck::kPreLeaf: return "pre_leaf";
    case OpeningCheck::kPreLeafProof: return "pre_leaf_proof";
    case OpeningCheck::kScheduleEntry: return "schedule_entry";
    case OpeningCheck::kScheduleProof: return "schedule_proof";
    case OpeningCheck::kSampleCount: return "sample_count";
    case OpeningCheck::kSampleIndex: return "sample_index";
    case OpeningCheck::kSamplePayload: return "sample_payload";
    case OpeningCheck::kSampleProof: return "sample_proof";
    case OpeningCheck::kPreStateDigest: return "pre_state_digest";
    case OpeningCheck::kPostStateDigest: return "post_state_digest";
    case OpeningCheck::kSpec: return "spec";
    case OpeningCheck::kProgram: return "program";
    case OpeningCheck::kReplay: return "replay";
    case OpeningCheck::kReplayedState: return "replayed_state";
    case OpeningCheck::kReplayedLoss: return "replayed_loss";
    case OpeningCheck::kReplayedBucket: return "replayed_bucket";
    case OpeningCheck::kNonFinite: return "nonfinite";
    case OpeningCheck::kLearningRate: return "learning_rate";
    case OpeningCheck::kCommittedNorm: return "committed_norm";
    case OpeningCheck::kGradientIgnored: return "gradient_ignored";
    case OpeningCheck::kSubnormal: return "subnormal";
    case OpeningCheck::kReplayedUpdate: return "replayed_update";
    case OpeningCheck::kTaskProgram: return "task_program";
    case OpeningCheck::kStateStats: return "state_stats";
    case OpeningCheck::kRunFlags: return "run_flags";
  }
  return "unknown";
}

Bytes OpeningManifest::encode() const {
  if (pre_state_ref.size() > kMaxRefBytes || post_state_ref.size() > kMaxRefBytes)
    fail(Status::kLimit, "manifest: state references are limited to {} bytes", kMaxRefBytes);
  v2::OpeningManifest p;
  p.set_run_id(as_string(run_id.view()));
  p.set_step(step);
  p.set_log_size(log_size);
  p.set_pre_state_digest(as_string(pre_state_digest.view()));
  p.set_pre_leaf(as_string(pre_leaf));
  p.set_pre_leaf_proof(as_string(pre_leaf_proof));
  p.set_post_leaf(as_string(post_leaf));
  p.set_post_leaf_proof(as_string(post_leaf_proof));
  p.set_schedule_entry(as_string(schedule_entry));
  p.set_schedule_proof(as_string(schedule_proof));
  for (const SampleOpening &s : samples) {
    v2::SampleOpening *o = p.add_samples();
    o->set_index(s.index);
    o->set_payload(as_string(s.payload));
    o->set_proof(as_string(s.proof));
    o->set_window(as_string(s.window));
  }
  p.set_pre_state_ref(pre_state_ref);
  p.set_post_state_ref(post_state_ref);
  p.set_stream(as_string(stream));
  p.set_run_leaves(as_string(run_leaves));
  for (const Bytes &t : run_tables) p.add_run_tables(as_string(t));
  for (uint64_t f : flagged_steps) p.add_flagged_steps(f);
  const std::string out = p.SerializeAsString();
  if (out.size() > kMaxManifestBytes)
    fail(Status::kLimit, "manifest of {} bytes, the limit is {}", out.size(), kMaxManifestBytes);
  return as_bytes(out);
}

OpeningManifest OpeningManifest::decode(ByteView b) {
  // A sample carries a payload of at least 10 bytes (the smallest safetensors
  // file), so its element (field 11) is at least 12 bytes.
  const auto p = codec::parse_bounded<v2::OpeningManifest>(b, kMaxManifestBytes, "manifest", {{11, 12}});
  OpeningManifest m;
  m.run_id = codec::digest_field(p.run_id(), "manifest: run_id");
  m.step = p.step();
  m.log_size = p.log_size();
  m.pre_state_digest = codec::digest_field(p.pre_state_digest(), "manifest: pre_state_digest");
  m.pre_leaf = as_bytes(p.pre_leaf());
  m.pre_leaf_proof = as_bytes(p.pre_leaf_proof());
  m.post_leaf = as_bytes(p.post_leaf());
  m.post_leaf_proof = as_bytes(p.post_leaf_proof());
  m.schedule_entry = as_bytes(p.schedule_entry());
  m.schedule_proof = as_bytes(p.schedule_proof());
  for (const v2::SampleOpening &s : p.samples())
    m.samples.push_back({s.index(), as_bytes(s.payload()), as_bytes(s.proof()), as_bytes(s.window())});
  m.pre_state_ref = p.pre_state_ref();
  m.post_state_ref = p.post_state_ref();
  m.stream = as_bytes(p.stream());
  m.run_leaves = as_bytes(p.run_leaves());
  for (const std::string &t : p.run_tables()) m.run_tables.push_back(as_bytes(t));
  m.flagged_steps.assign(p.flagged_steps().begin(), p.flagged_steps().end());
  codec::require_canonical(m.encode(), b, "manifest");
  return m;
}

hash::Digest OpeningManifest::digest() const {
  const Bytes b = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v3/opening");
  return h.update(b).finish();
}

namespace {

// Checks 2-5: the manifest opens the challenged step of this run, with
// proofs against the posted log.
void check_target(const TrainingCommitment &commitment, uint64_t challenged_step, uint64_t log_size,
                  const OpeningManifest &m) {
  const uint64_t t = m.step;
  if (m.run_id != commitment.run_id())
    failed(OpeningCheck::kRunId, Status::kProofMismatch,
           fmt::format("manifest is for run {}, not {}", m.run_id.hex(), commitment.run_id().hex()));
  if (t != challenged_step)
    failed(OpeningCheck::kStep, Status::kProofMismatch,
           fmt::format("the manifest opens step {}, the challenge is for step {}", t, challenged_step));
  if (t == 0 || t > commitment.declared_steps)
    failed(OpeningCheck::kStep, Status::kOutOfRange,
           fmt::format("step {} is outside 1..{}", t, commitment.declared_steps));
  if (m.log_size != log_size)
    failed(OpeningCheck::kLogSize, Status::kProofMismatch,
           fmt::format("proofs are for a log of {} leaves, the posted root covers {}", m.log_size, log_size));
  if (t > log_size)
    failed(OpeningCheck::kStep, Status::kOutOfRange,
           fmt::format("step {} is beyond the posted log of {} leaves", t, log_size));
}

// Leaf t: the committed result of the step.
StepLeaf check_post_leaf(const OpeningManifest &m, uint64_t log_size, const hash::Digest &log_root) {
  const uint64_t t = m.step;
  const StepLeaf post = under(OpeningCheck::kPostLeaf, "leaf t", [&] { return StepLeaf::decode(m.post_leaf); });
  if (post.run_id != m.run_id)
    failed(OpeningCheck::kPostLeaf, Status::kProofMismatch,
           fmt::format("leaf t is a step of run {}, not of {}", post.run_id.hex(), m.run_id.hex()));
  if (post.step != t)
    failed(OpeningCheck::kPostLeaf, Status::kProofMismatch, fmt::format("leaf t names step {}, not {}", post.step, t));
  under(OpeningCheck::kPostLeafProof, "leaf t", [&] {
    merkle::verify_inclusion(t - 1, log_size, post.leaf_hash().view(), merkle::decode_proof(m.post_leaf_proof),
                             log_root.view());
  });
  return post;
}

// The pre-state: the committed initial state, or leaf t-1 (returned: it
// commits S_{t-1}'s statistics).
std::optional<StepLeaf> check_pre_state(const TrainingCommitment &commitment, const OpeningManifest &m,
                                        uint64_t log_size, const hash::Digest &log_root) {
  const uint64_t t = m.step;
  if (t == 1) {
    if (!m.pre_leaf.empty() || !m.pre_leaf_proof.empty())
      failed(OpeningCheck::kPreLeaf, Status::kMalformed, "step 1 has no leaf t-1; the fields must be empty");
    if (m.pre_state_digest != commitment.initial_state_digest)
      failed(OpeningCheck::kPreStateCommitted, Status::kProofMismatch,
             "the pre-state of step 1 is not the committed initial state");
    return std::nullopt;
  }
  const StepLeaf pre = under(OpeningCheck::kPreLeaf, "leaf t-1", [&] { return StepLeaf::decode(m.pre_leaf); });
  if (pre.run_id != m.run_id)
    failed(OpeningCheck::kPreLeaf, Status::kProofMismatch,
           fmt::format("leaf t-1 is a step of run {}, not of {}", pre.run_id.hex(), m.run_id.hex()));
  if (pre.step != t - 1)
    failed(OpeningCheck::kPreLeaf, Status::kProofMismatch,
           fmt::format("leaf t-1 names step {}, not {}", pre.step, t - 1));
  if (pre.state_digest != m.pre_state_digest)
    failed(OpeningCheck::kPreLeaf, Status::kProofMismatch, "leaf t-1 commits to another pre-state digest");
  under(OpeningCheck::kPreLeafProof, "leaf t-1", [&] {
    merkle::verify_inclusion(t - 2, log_size, pre.leaf_hash().view(), merkle::decode_proof(m.pre_leaf_proof),
                             log_root.view());
  });
  return pre;
}

std::string steps_text(const std::vector<uint64_t> &steps) {
  return steps.empty() ? std::string("none") : fmt::format("{}", fmt::join(steps, ", "));
}

// Check 32: the run record. Every leaf of the posted log (their root is the
// posted root), the table of every state they commit (each digests to its
// leaf's statistics digest) and the steps those tables flag: the miner's
// list must be theirs, and the ledger's when the run sealed with one.
void check_run_record(const OpeningManifest &m, uint64_t log_size, const hash::Digest &log_root,
                      const std::optional<std::vector<uint64_t>> &sealed) {
  constexpr OpeningCheck c = OpeningCheck::kRunFlags;
  if (m.run_leaves.empty() && m.run_tables.empty())
    failed(c, Status::kUnsupported,
           "the manifest carries no run record (fields 16-18): a manifest of pot 0.2 (opening version 2); since "
           "pot 0.3.0 every opening serves the run's leaves, statistics tables and flagged steps");
  if (m.run_leaves.size() / StepLeaf::kSize != log_size || m.run_leaves.size() % StepLeaf::kSize != 0)
    failed(c, Status::kMalformed,
           fmt::format("the run record holds {} bytes of leaves, the posted log's {} leaves take {}",
                       m.run_leaves.size(), log_size, log_size * StepLeaf::kSize));
  if (m.run_tables.size() != log_size)
    failed(c, Status::kMalformed,
           fmt::format("the run record holds {} statistics tables, the posted log commits {}", m.run_tables.size(),
                       log_size));
  hash::Accumulator acc;
  for (uint64_t i = 0; i < log_size; ++i) {
    const ByteView bytes(m.run_leaves.data() + i * StepLeaf::kSize, StepLeaf::kSize);
    const std::string what = fmt::format("run record, leaf {}", i + 1);
    const StepLeaf leaf = under(c, what.c_str(), [&] { return StepLeaf::decode(bytes); });
    if (leaf.run_id != m.run_id || leaf.step != i + 1)
      failed(c, Status::kProofMismatch, fmt::format("{} names step {} of run {}", what, leaf.step, leaf.run_id.hex()));
    const hash::Digest table = statecheck::table_digest(m.run_tables[i]);
    if (table != leaf.stats_digest)
      failed(c, Status::kProofMismatch,
             fmt::format("the run record's table of S_{} digests to {}, leaf {} commits to {}", i + 1, table.hex(),
                         i + 1, leaf.stats_digest.hex()));
    acc.push_leaf(hash::leaf_hash(bytes));
  }
  if (acc.root() != log_root)
    failed(c, Status::kProofMismatch,
           fmt::format("the run record's leaves hash to {}, the posted root of {} leaves is {}", acc.root().hex(),
                       log_size, log_root.hex()));
  const std::vector<uint64_t> flagged = under(c, "run record", [&] { return flagged_steps(m.run_tables); });
  if (flagged != m.flagged_steps)
    failed(c, Status::kProofMismatch,
           fmt::format("the run's tables flag steps {}, the manifest lists {}", steps_text(flagged),
                       steps_text(m.flagged_steps)));
  if (sealed && *sealed != flagged)
    failed(c, Status::kProofMismatch,
           fmt::format("the run's tables flag steps {}, the run sealed on the ledger with {}: a flagged step hidden "
                       "from the ledger is not challenged for certain",
                       steps_text(flagged), steps_text(*sealed)));
}

// The batch: the schedule entry of t, proven against the schedule root.
std::vector<uint64_t> check_schedule_entry(const TrainingCommitment &commitment, const OpeningManifest &m) {
  const uint64_t t = m.step;
  const ScheduleEntry entry =
      under(OpeningCheck::kScheduleEntry, "schedule entry", [&] { return ScheduleEntry::decode(m.schedule_entry); });
  if (entry.step != t)
    failed(OpeningCheck::kScheduleEntry, Status::kProofMismatch,
           fmt::format("schedule entry is for step {}, not {}", entry.step, t));
  under(OpeningCheck::kScheduleProof, "schedule entry", [&] {
    merkle::verify_inclusion(t - 1, commitment.declared_steps, hash::leaf_hash(m.schedule_entry).view(),
                             merkle::decode_proof(m.schedule_proof), commitment.schedule_root.view());
  });
  std::vector<uint64_t> batch = entry.indices();
  if (m.samples.size() != batch.size())
    failed(OpeningCheck::kSampleCount, Status::kProofMismatch,
           fmt::format("{} samples served, the schedule assigns {}", m.samples.size(), batch.size()));
  return batch;
}

// A stream dataset (15.1): the descriptor must be the committed dataset
// before any window is checked against it.
std::optional<data::StreamDataset> check_stream(const TrainingCommitment &commitment, const OpeningManifest &m,
                                                size_t batch_size) {
  if (m.stream.empty()) return std::nullopt;
  data::StreamDataset stream =
      under(OpeningCheck::kSampleProof, "stream descriptor", [&] { return data::StreamDataset::decode(m.stream); });
  if (stream.root() != commitment.dataset_root)
    failed(OpeningCheck::kSampleProof, Status::kProofMismatch,
           fmt::format("the stream descriptor hashes to {}, the committed dataset root is {}", stream.root().hex(),
                       commitment.dataset_root.hex()));
  const uint64_t windows = under(OpeningCheck::kSampleProof, "stream descriptor", [&] { return stream.size(); });
  if (windows != commitment.dataset_size)
    failed(OpeningCheck::kSampleProof, Status::kProofMismatch,
           fmt::format("the stream descriptor gives {} windows, the committed dataset size is {}", windows,
                       commitment.dataset_size));
  // The samples are rebuilt in memory: never more bytes than a manifest
  // carrying them could hold.
  const uint64_t rebuilt = batch_size * stream.sample_bytes();
  if (batch_size > kMaxManifestBytes || rebuilt > kMaxManifestBytes)
    failed(OpeningCheck::kSamplePayload, Status::kLimit,
           fmt::format("the step's {} windows would rebuild {} bytes of samples, a manifest carries at most {}",
                       batch_size, rebuilt, kMaxManifestBytes));
  return stream;
}

// Sample i of a stream dataset: its window proof, from which its payload is
// rebuilt. Returns the sample's digest.
hash::Digest check_window_sample(const data::StreamDataset &stream, size_t i, SampleOpening &s) {
  if (!s.payload.empty() || !s.proof.empty())
    failed(OpeningCheck::kSamplePayload, Status::kMalformed,
           fmt::format("sample {}: a window of a stream dataset carries its window proof only", i));
  // (A sample with neither payload nor window is refused by check 1: its
  // element is shorter than any canonical one.)
  const std::string what = fmt::format("sample {} (window {})", i, s.index);
  const data::WindowProof proof =
      under(OpeningCheck::kSampleProof, what.c_str(), [&] { return data::WindowProof::decode(s.window); });
  if (proof.index != s.index)
    failed(OpeningCheck::kSampleProof, Status::kProofMismatch,
           fmt::format("{}: the proof is of window {}", what, proof.index));
  const Bytes tokens =
      under(OpeningCheck::kSampleProof, what.c_str(), [&] { return data::check_window(stream, s.index, proof); });
  s.payload = under(OpeningCheck::kSamplePayload, what.c_str(), [&] { return data::window_sample(stream, tokens); });
  return under(OpeningCheck::kSamplePayload, what.c_str(), [&] { return sample_digest(s.payload); });
}

// Sample i of a listed dataset: its payload, proven against the dataset root.
hash::Digest check_listed_sample(const TrainingCommitment &commitment, size_t i, const SampleOpening &s) {
  if (!s.window.empty())
    failed(OpeningCheck::kSamplePayload, Status::kMalformed,
           fmt::format("sample {} carries a window proof, but the manifest has no stream descriptor", i));
  const hash::Digest d =
      under(OpeningCheck::kSamplePayload, fmt::format("sample {}", i).c_str(), [&] { return sample_digest(s.payload); });
  under(OpeningCheck::kSampleProof, fmt::format("sample {} (index {})", i, s.index).c_str(), [&] {
    merkle::verify_inclusion(s.index, commitment.dataset_size, hash::leaf_hash(d.view()).view(),
                             merkle::decode_proof(s.proof), commitment.dataset_root.view());
  });
  return d;
}

void check_samples(const TrainingCommitment &commitment, const std::optional<data::StreamDataset> &stream,
                   OpeningResult &r) {
  for (size_t i = 0; i < r.manifest.samples.size(); ++i) {
    SampleOpening &s = r.manifest.samples[i];
    if (s.index != r.batch[i])
      failed(OpeningCheck::kSampleIndex, Status::kProofMismatch,
             fmt::format("sample {} has dataset index {}, the schedule says {}", i, s.index, r.batch[i]));
    r.sample_digests.push_back(stream ? check_window_sample(*stream, i, s) : check_listed_sample(commitment, i, s));
  }
}

// A served state file and its statistics table, from one read of its bytes
// (docs/PROTOCOL.md 5.2): the digest must be the committed one; the table's
// counts say whether the scans naming a non-finite or subnormal value run.
struct ServedState {
  std::unique_ptr<hash::SafetensorsFile> file;
  statecheck::StateStats stats;
};

ServedState check_served_state(const std::string &path, OpeningCheck check, const hash::Digest &committed,
                               unsigned threads, const char *served, const char *committer) {
  ServedState s;
  s.file = under(check, path.c_str(), [&] { return hash::SafetensorsFile::open(path); });
  const hash::Digest d = under(check, path.c_str(), [&] {
    const std::vector<hash::StTensor> tensors = hash::tensor_views(*s.file);  // name order
    statecheck::DigestedState read = statecheck::digest_and_stats(tensors, threads);
    std::map<std::string, hash::Digest> digests;
    for (size_t i = 0; i < tensors.size(); ++i) digests.emplace(tensors[i].meta.name, read.tensor_digests[i]);
    s.stats = std::move(read.stats);
    return hash::state_digest(digests);
  });
  if (d != committed)
    failed(check, Status::kProofMismatch,
           fmt::format("served {} digests to {}, {} commits to {}", served, d.hex(), committer, committed.hex()));
  return s;
}

void check_state_stats(const statecheck::StateStats &stats, const hash::Digest &committed, uint64_t step) {
  const hash::Digest d = stats.digest();
  if (d != committed)
    failed(OpeningCheck::kStateStats, Status::kProofMismatch,
           fmt::format("the statistics table of S_{} digests to {}, leaf {} commits to {}", step, d.hex(), step,
                       committed.hex()));
}

// A NaN or an infinity in the committed loss or a served state is no
// training step, whatever a replay would say (a NaN compares like any
// other bits in the bitwise path); each served state's statistics are the
// ones its leaf commits; with both states served, the committed norm is a
// function of them.
void check_values(const OpeningManifest &m, const StepLeaf &post, const std::optional<StepLeaf> &pre,
                  const ServedState *pre_state, const ServedState *post_state) {
  const hash::SafetensorsFile *pre_file = pre_state ? pre_state->file.get() : nullptr;
  const hash::SafetensorsFile *post_file = post_state ? post_state->file.get() : nullptr;
  using statecheck::TensorStats;
  if (!std::isfinite(post.loss))
    failed(OpeningCheck::kNonFinite, Status::kNonFinite, fmt::format("leaf {} commits to the loss {}", m.step, post.loss));
  if (!std::isfinite(post.update_norm))
    failed(OpeningCheck::kNonFinite, Status::kNonFinite,
           fmt::format("leaf {} commits to the update norm {}", m.step, post.update_norm));
  if (pre_file && pre_state->stats.any(&TensorStats::nonfinite))
    if (auto bad = hash::nonfinite_tensor(*pre_file))
      failed(OpeningCheck::kNonFinite, Status::kNonFinite, fmt::format("served S_{}: {}", m.step - 1, *bad));
  if (post_file && post_state->stats.any(&TensorStats::nonfinite))
    if (auto bad = hash::nonfinite_tensor(*post_file))
      failed(OpeningCheck::kNonFinite, Status::kNonFinite, fmt::format("served S_{}: {}", m.step, *bad));
  // Refused before any replay reads it: a verifier's time is not the
  // forger's to spend (docs/security.md, round 3 attack 7).
  if (pre_file && pre_state->stats.any(&TensorStats::subnormal))
    if (auto bad = hash::subnormal_excess(hash::subnormal_census(*pre_file)))
      failed(OpeningCheck::kSubnormal, Status::kInvalidArgument, fmt::format("served S_{}: {}", m.step - 1, *bad));
  if (post_file && post_state->stats.any(&TensorStats::subnormal))
    if (auto bad = hash::subnormal_excess(hash::subnormal_census(*post_file)))
      failed(OpeningCheck::kSubnormal, Status::kInvalidArgument, fmt::format("served S_{}: {}", m.step, *bad));
  if (pre_file && pre) check_state_stats(pre_state->stats, pre->stats_digest, m.step - 1);
  if (post_file) check_state_stats(post_state->stats, post.stats_digest, m.step);
  if (!pre_file || !post_file) return;
  const double norm = under(OpeningCheck::kCommittedNorm, "served states", [&] {
    return hash::update_norm(*pre_file, *post_file, std::string(hash::kLeafNormPrefix));
  });
  if (std::bit_cast<uint64_t>(norm) != std::bit_cast<uint64_t>(post.update_norm))
    failed(OpeningCheck::kCommittedNorm, Status::kProofMismatch,
           fmt::format("the served S_{} and S_{} are {:.17g} apart, leaf {} commits to the update norm {:.17g}",
                       m.step - 1, m.step, norm, m.step, post.update_norm));
}

}  // namespace

namespace {
uint64_t varint_bytes(uint64_t v) {
  uint64_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}
}  // namespace

uint64_t run_record_bytes(uint64_t steps, uint64_t table_bytes) {
  // Field 16: one bytes value of the leaves; field 17: one bytes value per
  // table; keys of fields 16 and 17 are 2 bytes. Saturates, never overflows.
  const auto mul = [](uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; };
  const uint64_t leaves = mul(steps, StepLeaf::kSize);
  const uint64_t per_table = table_bytes > UINT64_MAX - 12 ? UINT64_MAX : 2 + varint_bytes(table_bytes) + table_bytes;
  const uint64_t tables = mul(steps, per_table);
  const uint64_t field16 = leaves == UINT64_MAX ? UINT64_MAX : 2 + varint_bytes(leaves) + leaves;
  return saturating_add(field16, tables);
}

uint64_t max_recorded_steps(uint64_t table_bytes) {
  uint64_t lo = 0, hi = kMaxManifestBytes;  // every step adds more than one byte
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (run_record_bytes(mid, table_bytes) <= kMaxManifestBytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

std::vector<uint64_t> flagged_steps(const std::vector<Bytes> &tables) {
  std::vector<uint64_t> out;
  for (const statecheck::FlaggedStep &f : statecheck::run_flags(statecheck::decode_tables(tables)))
    out.push_back(f.step);
  return out;
}

OpeningResult verify_opening(const TrainingCommitment &commitment, uint64_t challenged_step, uint64_t log_size,
                             const hash::Digest &log_root, ByteView manifest,
                             const std::optional<std::string> &pre_state_path,
                             const std::optional<std::string> &post_state_path, unsigned threads,
                             const std::optional<std::vector<uint64_t>> &sealed_flags) {
  OpeningResult r;
  try {
    r.manifest = under(OpeningCheck::kManifest, "manifest", [&] { return OpeningManifest::decode(manifest); });
    const OpeningManifest &m = r.manifest;
    check_target(commitment, challenged_step, log_size, m);
    const StepLeaf post = check_post_leaf(m, log_size, log_root);
    r.post_state_digest = post.state_digest;
    r.post_stats_digest = post.stats_digest;
    r.committed_loss = post.loss;
    r.committed_update_norm = post.update_norm;
    const std::optional<StepLeaf> pre = check_pre_state(commitment, m, log_size, log_root);
    check_run_record(m, log_size, log_root, sealed_flags);
    r.batch = check_schedule_entry(commitment, m);
    const std::optional<data::StreamDataset> stream = check_stream(commitment, m, r.batch.size());
    check_samples(commitment, stream, r);
    std::optional<ServedState> pre_served, post_served;
    if (pre_state_path)
      pre_served = check_served_state(*pre_state_path, OpeningCheck::kPreStateDigest, m.pre_state_digest, threads,
                                      "pre-state", "the opening");
    if (post_state_path)
      post_served = check_served_state(*post_state_path, OpeningCheck::kPostStateDigest, post.state_digest, threads,
                                       "post-state", "leaf t");
    check_values(m, post, pre, pre_served ? &*pre_served : nullptr, post_served ? &*post_served : nullptr);
    r.message = "all checks passed";
  } catch (const CheckFailed &f) {
    r.check = f.check;
    r.status = f.status;
    r.message = fmt::format("{}: {}", opening_check_name(f.check), f.message);
  }
  return r;
}

}  // namespace pot::commit
