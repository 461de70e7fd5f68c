// The off-chain verdict (pot_verdict, docs/PROTOCOL.md section 19): the
// largest cluster of equal revealed values, never a vote count alone. The
// statements witnesses commit to are statement.h's; the ledger's own rule,
// weighed by committee stake, is game/ledger.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hash/sha256.h"
#include "witness/statement.h"

namespace pot::witness {

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
