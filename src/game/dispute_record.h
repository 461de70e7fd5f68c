// Dispute records (docs/PROTOCOL.md section 20.2): what a ledger dispute
// (docs/ledger.md sections 2.12-2.14) leaves in the outcome log when it
// ends: the step the bisection found, or the party that missed a deadline.
// The ledger prunes the dispute when it appends the record, so the state
// holds open disputes only.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "hash/sha256.h"
#include "witness/witness.h"

namespace pot::game {

// How a ledger dispute ended.
enum class DisputeEnd : uint8_t {
  kStepFound = 1,          // the bisection is down to one step: S_{step-1} agreed, S_step disputed
  kMinerDefault = 2,       // the miner missed a round's deadline: the miner loses
  kChallengerDefault = 3,  // the challenger missed it: the challenger loses
  kBothDefault = 4,        // neither claimed by the deadline: both lose
};

// "step_found", "miner_default", "challenger_default", "both_default".
const char *dispute_end_name(DisputeEnd e) noexcept;

struct DisputeRecord {
  uint64_t dispute_id = 0;
  hash::Digest run_id;
  Bytes miner;       // the run's miner, party A: its claims are its step leaves
  Bytes challenger;  // the registered verifier that opened the dispute, party B
  uint64_t lo = 0;   // the interval the dispute opened over: S_lo agreed, S_hi disputed
  uint64_t hi = 0;
  DisputeEnd end = DisputeEnd::kStepFound;
  uint32_t rounds = 0;  // rounds played
  // kStepFound: the step, the agreed digest of S_{step-1} and the parties'
  // digests of S_step (the miner's its committed leaf's). Otherwise 0 and
  // all-zero digests.
  uint64_t step = 0;
  hash::Digest agreed;
  hash::Digest miner_digest;
  hash::Digest challenger_digest;

  // The record's bytes, the outcome log's leaf data:
  //   u8(22) || "pot/v2/dispute-outcome" || u64le(dispute_id) || run_id ||
  //   u32le(len) || miner || u32le(len) || challenger || u64le(lo) || u64le(hi) ||
  //   u8(end) || u32le(rounds) || u64le(step) || agreed || miner_digest || challenger_digest
  Bytes encode() const;
  // Strict inverse of encode(): kMalformed naming the first violation (a
  // record of another version is named as such), kLimit past
  // kMaxDisputeRecordBytes.
  static DisputeRecord decode(ByteView b);
  // {"dispute_id", "run_id", "miner", "challenger" (hex), "lo", "hi",
  //  "end", "rounds", "step", "agreed", "miner_digest", "challenger_digest",
  //  "losers": ["miner"|"challenger"...]} (digests null unless step_found).
  nlohmann::json to_json() const;
  // The parties that lost by default ("miner", "challenger"); empty for
  // kStepFound (the operator phase names the loser).
  std::vector<std::string> losers() const;
  bool operator==(const DisputeRecord &) const = default;
};

inline constexpr std::string_view kDisputeRecordTag = "pot/v2/dispute-outcome";
inline constexpr size_t kDisputeRecordFixedBytes = 1 + kDisputeRecordTag.size() + 8 + 32 + 4 + 4 + 8 + 8 + 1 + 4 + 8 + 3 * 32;
inline constexpr size_t kMaxDisputeRecordBytes = kDisputeRecordFixedBytes + 2 * witness::kMaxIdentity;

// Whether `record` starts with the dispute record's tag (of any version):
// the outcome log holds both kinds, told apart by their tags.
bool is_dispute_record(ByteView record) noexcept;

}  // namespace pot::game
