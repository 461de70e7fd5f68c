// Witnesses (docs/PROTOCOL.md section 19): each verifier first commits to
// the value it computed for a challenged step, salted and bound to its
// identity, then reveals it; the verdict comes from the largest cluster of
// equal revealed values, never from a vote count alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hash/sha256.h"

namespace pot::witness {

inline constexpr size_t kMinSalt = 16;
inline constexpr size_t kMaxSalt = 64;
inline constexpr size_t kMaxIdentity = 256;

// What a verifier computed by replaying step `step` of run `run_id`: the
// digest of the replayed state and the norm bucket of the update.
struct WitnessValue {
  hash::Digest run_id;
  uint64_t step = 0;
  hash::Digest replayed_state;
  int64_t bucket = 0;
};

// tagged("pot/v1/witness", run_id || u64le(step) || replayed_state ||
// i64le(bucket) || u32le(len(salt)) || salt || u32le(len(identity)) ||
// identity). kInvalidArgument for a salt outside 16..64 bytes or an identity
// outside 1..256 bytes, or step 0.
hash::Digest witness_commitment(const WitnessValue &v, ByteView salt, ByteView identity);

// 32 bytes from OpenSSL's CSPRNG (kBackend if it fails).
Bytes fresh_salt();

// Checks a reveal against a commitment: kProofMismatch unless value, salt
// and identity are exactly those committed to (a reveal under another
// identity never opens someone else's commitment).
void verify_reveal(const hash::Digest &commitment, const WitnessValue &v, ByteView salt, ByteView identity);

enum class Mode { kBitwise = 1, kNormBucket = 2 };
enum class Verdict { kPass = 1, kFail = 2, kInconclusive = 3 };

struct Revealed {
  Bytes identity;
  hash::Digest replayed_state;
  int64_t bucket = 0;
};

struct VerdictResult {
  Verdict verdict = Verdict::kInconclusive;
  size_t cluster_size = 0;       // reveals in the largest cluster
  size_t reveals = 0;            // distinct identities counted
  hash::Digest cluster_state;    // bitwise mode: the cluster's value
  int64_t cluster_bucket = 0;    // norm-bucket mode: the cluster's value
  std::string reason;
};

// The largest cluster of identical values (replayed digests in bitwise mode,
// buckets in norm-bucket mode) must hold at least `quorum` reveals and be
// strictly larger than any other cluster; else kInconclusive, never a guess.
// It is then compared with the committed leaf's state digest (bitwise) or,
// allowing an adjacent bucket, with the bucket of the opened leaf's committed
// update norm.
// kInvalidArgument for quorum 0 or a repeated identity.
VerdictResult decide(const std::vector<Revealed> &reveals, Mode mode, const hash::Digest &committed_state,
                     std::optional<int64_t> committed_bucket, size_t quorum);

}  // namespace pot::witness
