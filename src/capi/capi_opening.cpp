// C entry points for openings and witnesses.
#include <cmath>

#include "capi/firewall.h"
#include "capi/handles.h"
#include "commit/opening.h"
#include "witness/witness.h"

using namespace pot;
using namespace pot::capi;

struct pot_opening {
  commit::OpeningManifest m;
};

struct pot_verdict {
  witness::Mode mode;
  size_t quorum;
  std::vector<witness::Revealed> reveals;
  std::string reason;
};

static_assert(POT_CHECK_POST_STATE_DIGEST == static_cast<int>(commit::OpeningCheck::kPostStateDigest));
static_assert(POT_CHECK_REPLAYED_BUCKET == static_cast<int>(commit::OpeningCheck::kReplayedBucket));
static_assert(POT_CHECK_NONFINITE == static_cast<int>(commit::OpeningCheck::kNonFinite));
static_assert(POT_CHECK_LEARNING_RATE == static_cast<int>(commit::OpeningCheck::kLearningRate));
static_assert(POT_CHECK_COMMITTED_NORM == static_cast<int>(commit::OpeningCheck::kCommittedNorm));
static_assert(POT_CHECK_GRADIENT_IGNORED == static_cast<int>(commit::OpeningCheck::kGradientIgnored));
static_assert(POT_CHECK_SUBNORMAL == static_cast<int>(commit::OpeningCheck::kSubnormal));
static_assert(POT_CHECK_REPLAYED_UPDATE == static_cast<int>(commit::OpeningCheck::kReplayedUpdate));
static_assert(POT_CHECK_TASK_PROGRAM == static_cast<int>(commit::OpeningCheck::kTaskProgram));
static_assert(POT_CHECK_STATE_STATS == static_cast<int>(commit::OpeningCheck::kStateStats));
static_assert(POT_CHECK_RUN_FLAGS == static_cast<int>(commit::OpeningCheck::kRunFlags));
static_assert(POT_CHECK_RUN_FLAGS == static_cast<int>(commit::kLastOpeningCheck));
static_assert(POT_CHECK_SAMPLE_PROOF == static_cast<int>(commit::OpeningCheck::kSampleProof));
static_assert(POT_WITNESS_SALT_SIZE == 32);

namespace {
Bytes copy(const uint8_t *p, size_t n, const char *param) {
  const ByteView v = bytes_arg(p, n, param);
  return Bytes(v.begin(), v.end());
}
}  // namespace

extern "C" {

pot_status pot_opening_new(pot_opening **out, const pot_digest *run_id, uint64_t step, uint64_t log_size,
                           const pot_digest *pre_state_digest, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    commit::OpeningManifest m;
    m.run_id = to_digest(run_id, "run_id");
    m.step = step;
    m.log_size = log_size;
    m.pre_state_digest = to_digest(pre_state_digest, "pre_state_digest");
    *out = new pot_opening{std::move(m)};
  });
}

void pot_opening_free(pot_opening *opening) { delete opening; }

pot_status pot_opening_set_pre_leaf(pot_opening *opening, const uint8_t *leaf, size_t leaf_len, const uint8_t *proof,
                                    size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    Bytes l = copy(leaf, leaf_len, "leaf"), p = copy(proof, proof_len, "proof");
    opening->m.pre_leaf = std::move(l);
    opening->m.pre_leaf_proof = std::move(p);
  });
}

pot_status pot_opening_set_post_leaf(pot_opening *opening, const uint8_t *leaf, size_t leaf_len, const uint8_t *proof,
                                     size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    Bytes l = copy(leaf, leaf_len, "leaf"), p = copy(proof, proof_len, "proof");
    opening->m.post_leaf = std::move(l);
    opening->m.post_leaf_proof = std::move(p);
  });
}

pot_status pot_opening_set_schedule(pot_opening *opening, const uint8_t *entry, size_t entry_len, const uint8_t *proof,
                                    size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    Bytes e = copy(entry, entry_len, "entry"), p = copy(proof, proof_len, "proof");
    opening->m.schedule_entry = std::move(e);
    opening->m.schedule_proof = std::move(p);
  });
}

pot_status pot_opening_add_sample(pot_opening *opening, uint64_t index, const uint8_t *payload, size_t payload_len,
                                  const uint8_t *proof, size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    commit::SampleOpening s{index, copy(payload, payload_len, "payload"), copy(proof, proof_len, "proof"), {}};
    opening->m.samples.push_back(std::move(s));
  });
}

pot_status pot_opening_set_stream(pot_opening *opening, const uint8_t *descriptor, size_t descriptor_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    opening->m.stream = copy(descriptor, descriptor_len, "descriptor");
  });
}

pot_status pot_opening_add_window(pot_opening *opening, uint64_t index, const uint8_t *proof, size_t proof_len,
                                  pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    commit::SampleOpening s{index, {}, {}, copy(proof, proof_len, "proof")};
    opening->m.samples.push_back(std::move(s));
  });
}

pot_status pot_opening_set_state_refs(pot_opening *opening, const char *pre_state_ref, const char *post_state_ref,
                                      pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    std::string pre = pre_state_ref ? pre_state_ref : "", post = post_state_ref ? post_state_ref : "";
    if (pre.size() > commit::kMaxRefBytes || post.size() > commit::kMaxRefBytes)
      fail(Status::kLimit, "state references are limited to {} bytes", commit::kMaxRefBytes);
    opening->m.pre_state_ref = std::move(pre);
    opening->m.post_state_ref = std::move(post);
  });
}

pot_status pot_opening_set_run_record(pot_opening *opening, const uint8_t *leaves, size_t leaves_len,
                                      const uint8_t *const *tables, const size_t *tables_lens, size_t tables_len,
                                      const uint64_t *flagged_steps, size_t flagged_steps_len, pot_error **err) {
  return guard(err, [&] {
    need(opening, "opening");
    Bytes l = copy(leaves, leaves_len, "leaves");
    std::vector<Bytes> t = byte_list_arg(tables, tables_lens, tables_len, "tables");
    std::vector<uint64_t> f = u64_list_arg(flagged_steps, flagged_steps_len, "flagged_steps");
    opening->m.run_leaves = std::move(l);
    opening->m.run_tables = std::move(t);
    opening->m.flagged_steps = std::move(f);
  });
}

pot_status pot_opening_encode(pot_bytes *out, const pot_opening *opening, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(opening, "opening")->m.encode());
  });
}

pot_status pot_opening_digest(pot_digest *out, const pot_opening *opening, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(opening, "opening")->m.digest());
  });
}

const char *pot_opening_check_name(pot_opening_check check) {
  const int c = enum_arg(check);
  if (c < 0 || c > static_cast<int>(commit::kLastOpeningCheck)) return "unknown";
  return commit::opening_check_name(static_cast<commit::OpeningCheck>(c));
}

pot_status pot_opening_verify(pot_opening_check *check, const pot_commitment *commitment, uint64_t challenged_step,
                              uint64_t log_size,
                              const pot_digest *log_root, const uint8_t *manifest, size_t manifest_len,
                              const char *pre_state_path, const char *post_state_path, uint32_t threads,
                              pot_error **err) {
  commit::OpeningResult r;
  const pot_status s = guard(err, [&] {
    r = commit::verify_opening(need(commitment, "commitment")->c, challenged_step, log_size, to_digest(log_root, "log_root"),
                               bytes_arg(manifest, manifest_len, "manifest"),
                               pre_state_path ? std::optional<std::string>(pre_state_path) : std::nullopt,
                               post_state_path ? std::optional<std::string>(post_state_path) : std::nullopt, threads,
                               commitment->sealed_flags);
    if (r.check != commit::OpeningCheck::kOk) throw Error(r.status, r.message);
  });
  if (check && (s == POT_OK || r.check != commit::OpeningCheck::kOk)) *check = static_cast<pot_opening_check>(r.check);
  return s;
}

pot_status pot_witness_salt(uint8_t out[POT_WITNESS_SALT_SIZE], pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const Bytes s = witness::fresh_salt();
    std::memcpy(out, s.data(), POT_WITNESS_SALT_SIZE);
  });
}

pot_status pot_witness_commitment(pot_digest *out, const char *statement_json, const uint8_t *salt,
                                  size_t salt_len, const uint8_t *identity, size_t identity_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const witness::Statement s = witness::Statement::from_json(parse_json_arg(statement_json, "statement_json"));
    from_digest(out, witness::witness_commitment(s, bytes_arg(salt, salt_len, "salt"),
                                                 bytes_arg(identity, identity_len, "identity")));
  });
}

pot_status pot_witness_verify_reveal(const pot_digest *commitment, const char *statement_json, const uint8_t *salt,
                                     size_t salt_len, const uint8_t *identity, size_t identity_len,
                                     pot_error **err) {
  return guard(err, [&] {
    const hash::Digest c = to_digest(commitment, "commitment");
    const witness::Statement s = witness::Statement::from_json(parse_json_arg(statement_json, "statement_json"));
    witness::verify_reveal(c, s, bytes_arg(salt, salt_len, "salt"), bytes_arg(identity, identity_len, "identity"));
  });
}

pot_status pot_verdict_new(pot_verdict **out, pot_witness_mode mode, uint32_t quorum, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const int m = enum_arg(mode);
    if (m != POT_WITNESS_BITWISE && m != POT_WITNESS_NORM_BUCKET)
      fail(Status::kInvalidArgument, "{} is not a pot_witness_mode", m);
    if (quorum == 0) fail(Status::kInvalidArgument, "the quorum must be at least 1");
    *out = new pot_verdict{static_cast<witness::Mode>(m), quorum, {}, ""};
  });
}

void pot_verdict_free(pot_verdict *verdict) { delete verdict; }

pot_status pot_verdict_add_reveal(pot_verdict *verdict, const uint8_t *identity, size_t identity_len,
                                  const pot_digest *replayed_state, int64_t bucket, pot_error **err) {
  return guard(err, [&] {
    need(verdict, "verdict");
    witness::Revealed r{copy(identity, identity_len, "identity"), to_digest(replayed_state, "replayed_state"), bucket};
    if (r.identity.empty() || r.identity.size() > witness::kMaxIdentity)
      fail(Status::kInvalidArgument, "identity of {} bytes, expected 1..{}", r.identity.size(), witness::kMaxIdentity);
    verdict->reveals.push_back(std::move(r));
  });
}

pot_status pot_verdict_decide(pot_verdict_outcome *outcome, size_t *cluster_size, pot_verdict *verdict,
                              const pot_digest *committed_state, const int64_t *committed_bucket, pot_error **err) {
  return guard(err, [&] {
    need(outcome, "outcome");
    need(verdict, "verdict");
    const hash::Digest committed = committed_state ? to_digest(committed_state, "committed_state") : hash::Digest{};
    if (verdict->mode == witness::Mode::kBitwise && !committed_state)
      fail(Status::kInvalidArgument, "bitwise mode needs the committed state digest");
    const auto r = witness::decide(verdict->reveals, verdict->mode, committed,
                                   committed_bucket ? std::optional<int64_t>(*committed_bucket) : std::nullopt,
                                   verdict->quorum);
    verdict->reason = r.reason;
    *outcome = static_cast<pot_verdict_outcome>(r.verdict);
    if (cluster_size) *cluster_size = r.cluster_size;
  });
}

const char *pot_verdict_reason(const pot_verdict *verdict) { return verdict ? verdict->reason.c_str() : ""; }

}  // extern "C"
