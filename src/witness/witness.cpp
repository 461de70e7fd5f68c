#include "witness/witness.h"

#include <map>
#include <set>

#include "common/error.h"
#include "witness/norm_bucket.h"

namespace pot::witness {

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
