// Outcome records (docs/PROTOCOL.md section 20.1): what a finalized ledger
// challenge leaves behind once the ledger prunes it. Each finalize appends
// one record to the ledger's outcome log, an RFC 6962 tree the state keeps
// as its right border (at most 64 hashes), so a chain can slash or pay on a
// record, and anyone can later prove a record against a logged root, while
// the saved state stays bounded by open work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "hash/sha256.h"
#include "game/committee.h"
#include "witness/statement.h"
#include "witness/witness.h"

namespace pot::game {

// Why a challenge ended as it did (docs/ledger.md section 2.9).
enum class Cause : uint8_t {
  kAgreement = 1,      // PASS: a stake majority agrees with the opened step
  kNoOpening = 2,      // FAIL: the miner opened nothing in the opening window
  kBlame = 3,          // FAIL: a stake majority blames the miner
  kNoCommittee = 4,    // INCONCLUSIVE: nobody was registered before the draw
  kParticipation = 5,  // INCONCLUSIVE: counted reveals hold at most half the stake
  kSplit = 6,          // INCONCLUSIVE: they hold more, but no side a majority
  kTaskProgram = 7,    // INCONCLUSIVE: a stake majority finds the task's program at fault (check 30)
};

// "agreement", "no_opening", "blame", "no_committee", "participation", "split",
// "task_program".
const char *cause_name(Cause c) noexcept;

struct Outcome {
  uint64_t challenge_id = 0;
  uint32_t attempt = 1;  // the committee's: 1 for the first, 2.. for redraws
  hash::Digest run_id;
  uint64_t step = 0;
  witness::Mode mode = witness::Mode::kBitwise;
  witness::Verdict verdict = witness::Verdict::kInconclusive;
  Cause cause = Cause::kNoCommittee;
  uint64_t cluster_size = 0;
  uint64_t cluster_stake = 0;
  uint64_t committee_stake = 0;
  // Committee members, each list sorted bytewise and without repeats.
  std::vector<Bytes> minority;
  std::vector<Bytes> silent;
  std::vector<Bytes> misconfigured;
  std::vector<Bytes> unreplayed;

  // The record's bytes, the outcome log's leaf data:
  //   u8(14) || "pot/v2/outcome" || u64le(challenge_id) || u32le(attempt) || run_id ||
  //   u64le(step) || u8(mode) || u8(verdict) || u8(cause) ||
  //   u64le(cluster_size) || u64le(cluster_stake) || u64le(committee_stake) ||
  //   ids(minority) || ids(silent) || ids(misconfigured) || ids(unreplayed)
  // with ids(L) = u32le(count) || per identity u32le(len) || identity.
  Bytes encode() const;
  // Strict inverse of encode(): kMalformed naming the first violation (a
  // record of another version is named as such), kLimit past kMaxOutcomeBytes.
  static Outcome decode(ByteView b);
  // {"challenge_id", "attempt", "run_id" (hex), "step", "mode" ("bitwise",
  // "norm_bucket"), "verdict" ("pass", "fail", "inconclusive"), "cause",
  // "cluster_size", "cluster_stake", "committee_stake", "minority",
  // "silent", "misconfigured", "unreplayed" (hex identities, sorted)}.
  nlohmann::json to_json() const;
  bool operator==(const Outcome &) const = default;
};

// A list of identities as JSON: their hex strings, in order.
nlohmann::json identities_json(const std::vector<Bytes> &ids);

// A record lists each committee member at most once: 110 fixed bytes and at
// most kMaxCommitteeSize identities of up to 256 bytes.
inline constexpr size_t kMaxOutcomeBytes = 110 + size_t{kMaxCommitteeSize} * (4 + witness::kMaxIdentity);

}  // namespace pot::game
