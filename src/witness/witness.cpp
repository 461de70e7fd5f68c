#include "witness/witness.h"

#include <openssl/rand.h>

#include <map>
#include <set>

#include "common/error.h"
#include "witness/norm_bucket.h"

namespace pot::witness {

hash::Digest witness_commitment(const WitnessValue &v, ByteView salt, ByteView identity) {
  if (v.step == 0) fail(Status::kInvalidArgument, "witness: steps are numbered from 1");
  if (salt.size() < kMinSalt || salt.size() > kMaxSalt)
    fail(Status::kInvalidArgument, "witness: salt of {} bytes, expected {}..{}", salt.size(), kMinSalt, kMaxSalt);
  if (identity.empty() || identity.size() > kMaxIdentity)
    fail(Status::kInvalidArgument, "witness: identity of {} bytes, expected 1..{}", identity.size(), kMaxIdentity);
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v1/witness");
  h.update(v.run_id.view()).update_u64le(v.step).update(v.replayed_state.view());
  h.update_u64le(static_cast<uint64_t>(v.bucket));
  h.update_u32le(static_cast<uint32_t>(salt.size())).update(salt);
  h.update_u32le(static_cast<uint32_t>(identity.size())).update(identity);
  return h.finish();
}

Bytes fresh_salt() {
  Bytes s(32);
  if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) fail(Status::kBackend, "OpenSSL RAND_bytes failed");
  return s;
}

void verify_reveal(const hash::Digest &commitment, const WitnessValue &v, ByteView salt, ByteView identity) {
  if (witness_commitment(v, salt, identity) == commitment) return;
  fail(Status::kProofMismatch,
       "witness reveal does not open the commitment (another value, salt or identity than committed)");
}

VerdictResult decide(const std::vector<Revealed> &reveals, Mode mode, const hash::Digest &committed_state,
                     std::optional<int64_t> committed_bucket, size_t quorum) {
  if (quorum == 0) fail(Status::kInvalidArgument, "verdict: the quorum must be at least 1");
  if (mode == Mode::kNormBucket && !committed_bucket)
    fail(Status::kInvalidArgument, "verdict: norm-bucket mode needs the committed bucket (of the opened leaf's update norm)");
  std::set<Bytes> seen;
  std::map<Bytes, size_t> clusters;  // value bytes -> count
  for (const Revealed &r : reveals) {
    if (!seen.insert(r.identity).second)
      fail(Status::kInvalidArgument, "verdict: identity {} revealed twice", to_hex(r.identity));
    Bytes key;
    if (mode == Mode::kBitwise) key.assign(r.replayed_state.bytes.begin(), r.replayed_state.bytes.end());
    else put_u64le(key, static_cast<uint64_t>(r.bucket));
    clusters[key]++;
  }
  VerdictResult out;
  out.reveals = reveals.size();
  const Bytes *best = nullptr;
  size_t second = 0;
  for (const auto &[key, n] : clusters) {
    if (!best || n > out.cluster_size) {
      second = out.cluster_size;
      out.cluster_size = n;
      best = &key;
    } else if (n > second) {
      second = n;
    }
  }
  if (!best) {
    out.reason = "no reveals";
    return out;
  }
  if (mode == Mode::kBitwise) out.cluster_state = hash::Digest::from_bytes(*best);
  else out.cluster_bucket = static_cast<int64_t>(get_u64le(best->data()));
  if (out.cluster_size == second) {
    out.reason = fmt::format("two clusters of {} reveals tie", second);
    return out;
  }
  if (out.cluster_size < quorum) {
    out.reason = fmt::format("largest cluster has {} reveals, the quorum is {}", out.cluster_size, quorum);
    return out;
  }
  if (mode == Mode::kBitwise) {
    const bool ok = out.cluster_state == committed_state;
    out.verdict = ok ? Verdict::kPass : Verdict::kFail;
    out.reason = ok ? "the largest cluster reproduces the committed state digest"
                    : "the largest cluster's replayed digest differs from the committed state digest";
  } else {
    const bool ok = buckets_match(*committed_bucket, out.cluster_bucket);
    out.verdict = ok ? Verdict::kPass : Verdict::kFail;
    out.reason = fmt::format("the largest cluster's bucket {} {} the committed bucket {}", out.cluster_bucket,
                             ok ? "matches" : "does not match", *committed_bucket);
  }
  return out;
}

}  // namespace pot::witness
