// Dispute records (docs/PROTOCOL.md section 20.2): what a ledger dispute
// (docs/ledger.md sections 2.12-2.17) leaves in the outcome log when it
// ends: the ruling and the rule, the party that missed a deadline, or (with
// no referee) the step the bisection found.
// The ledger prunes the dispute when it appends the record, so the state
// holds open disputes only.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "hash/sha256.h"
#include "witness/witness.h"

namespace pot::game {

// The phase a ledger dispute is in (docs/ledger.md 2.12-2.17), or ended in.
enum class DisputePhase : uint8_t {
  kSteps = 1,      // the step bisection
  kTraces = 2,     // each party commits its operator trace of the step found
  kOperators = 3,  // the operator bisection over the traces
  kOpenings = 4,   // each party opens the node found; the ledger checks rules 1 and 2
  kReferee = 5,    // the ledger's referee rules (rules 3 and 4, batch sources)
};

// "steps", "traces", "operators", "openings", "referee".
const char *dispute_phase_name(DisputePhase p) noexcept;

// How a ledger dispute ended.
enum class DisputeEnd : uint8_t {
  kStepFound = 1,          // no referee configured: the step is found, S_{step-1} agreed, S_step disputed
  kMinerDefault = 2,       // the miner missed a deadline: the miner loses
  kChallengerDefault = 3,  // the challenger missed it: the challenger loses
  kBothDefault = 4,        // neither answered by the deadline: both lose
  kRuled = 5,              // the ledger ruled on the openings (rules 1 and 2, the post-state node)
  kRefereeRuled = 6,       // the referee ruled (the operator run, the step replay, a batch source)
  kRefereeDefault = 7,     // the referee did not rule by its deadline: no loser
};

// "step_found", "miner_default", "challenger_default", "both_default",
// "ruled", "referee_ruled", "referee_default".
const char *dispute_end_name(DisputeEnd e) noexcept;

// The referee's rules (docs/PROTOCOL.md 22.3), as a ruling names them.
enum class DisputeRule : uint8_t {
  kNone = 0,
  kOpening = 1,
  kSource = 2,
  kOperator = 3,
  kPostState = 4,
  kStep = 5,
};

// "", "opening", "source", "operator", "post_state", "step".
const char *dispute_rule_name(DisputeRule r) noexcept;
// The rule of that name; kInvalidArgument for another.
DisputeRule dispute_rule_from_name(std::string_view name);

inline constexpr uint8_t kLoserMiner = 1;
inline constexpr uint8_t kLoserChallenger = 2;

// One party's committed operator trace of the step found: its node count
// and root (docs/PROTOCOL.md 22.2). Size 0: not committed.
struct TraceCommitment {
  uint64_t size = 0;
  hash::Digest root;
  bool operator==(const TraceCommitment &) const = default;
};

struct DisputeRecord {
  uint64_t dispute_id = 0;
  hash::Digest run_id;
  Bytes miner;       // the run's miner, party A: its step claims are its step leaves
  Bytes challenger;  // the registered verifier that opened the dispute, party B
  uint64_t lo = 0;   // the interval the dispute opened over: S_lo agreed, S_hi disputed
  uint64_t hi = 0;
  DisputeEnd end = DisputeEnd::kStepFound;
  DisputePhase phase = DisputePhase::kSteps;  // the phase it ended in
  uint8_t losers = 0;   // kLoserMiner | kLoserChallenger
  uint32_t rounds = 0;  // step bisection rounds played
  // Once the step bisection is done (a phase past kSteps, or kStepFound):
  // the step, the agreed digest of S_{step-1} and the parties' digests of
  // S_step (the miner's its committed leaf's). Otherwise 0 and all-zero.
  uint64_t step = 0;
  hash::Digest agreed;
  hash::Digest miner_digest;
  hash::Digest challenger_digest;
  // From the traces phase: each party's trace commitment (zero if it made none).
  TraceCommitment miner_trace, challenger_trace;
  uint32_t op_rounds = 0;  // operator bisection rounds played
  uint64_t node = 0;       // from the openings phase: the first differing node
  DisputeRule rule = DisputeRule::kNone;  // kRuled, kRefereeRuled: the rule that decided

  // The record's bytes, the outcome log's leaf data (docs/PROTOCOL.md 20.2):
  //   u8(22) || "pot/v3/dispute-outcome" || u64le(dispute_id) || run_id ||
  //   u32le(len) || miner || u32le(len) || challenger || u64le(lo) || u64le(hi) ||
  //   u8(end) || u8(phase) || u8(losers) || u32le(rounds) ||
  //   u64le(step) || agreed || miner_digest || challenger_digest ||
  //   u64le(miner trace size) || miner trace root ||
  //   u64le(challenger trace size) || challenger trace root ||
  //   u32le(op_rounds) || u64le(node) || u8(rule)
  Bytes encode() const;
  // Strict inverse of encode(): kMalformed naming the first violation (a
  // record of another version is named as such), kLimit past
  // kMaxDisputeRecordBytes.
  static DisputeRecord decode(ByteView b);
  // {"dispute_id", "run_id", "miner", "challenger" (hex), "lo", "hi",
  //  "end", "phase", "rounds", "step", "agreed", "miner_digest",
  //  "challenger_digest", "miner_trace", "challenger_trace" ({"size",
  //  "root"} or null), "op_rounds", "node", "rule", "losers":
  //  ["miner"|"challenger"...]} (step fields null before the step is found,
  //  node null before the openings phase, rule null unless ruled).
  nlohmann::json to_json() const;
  // The parties the dispute names as losers ("miner", "challenger").
  std::vector<std::string> loser_names() const;
  bool operator==(const DisputeRecord &) const = default;
};

inline constexpr std::string_view kDisputeRecordTag = "pot/v3/dispute-outcome";
inline constexpr size_t kDisputeRecordFixedBytes =
    1 + kDisputeRecordTag.size() + 8 + 32 + 4 + 4 + 8 + 8 + 1 + 1 + 1 + 4 + 8 + 3 * 32 + 2 * (8 + 32) + 4 + 8 + 1;
inline constexpr size_t kMaxDisputeRecordBytes = kDisputeRecordFixedBytes + 2 * witness::kMaxIdentity;

// Whether `record` starts with the dispute record's tag (of any version):
// the outcome log holds both kinds, told apart by their tags.
bool is_dispute_record(ByteView record) noexcept;

}  // namespace pot::game
