// What a committee member says about one challenge (docs/PROTOCOL.md
// section 19): the challenge it answers (run, step, ledger challenge id,
// mode), the environment it verified in, and what it found: the value its
// replay gave, that no opening reached it, or the opening check that
// failed. It commits to the statement, salted and bound to its identity,
// and reveals it once the commit phase is over.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commit/opening.h"
#include "spec/spec.h"
#include "hash/sha256.h"

namespace pot::witness {

inline constexpr size_t kMinSalt = 16;
inline constexpr size_t kMaxSalt = 64;
inline constexpr size_t kMaxIdentity = 256;
inline constexpr size_t kMaxFrameworkVersion = 64;
inline constexpr size_t kMaxHardwareClass = 256;
inline constexpr uint32_t kMaxIntraOpThreads = 1024;

enum class Mode { kBitwise = 1, kNormBucket = 2 };

// What the member found. The numbers are the encoding's (u8).
enum class Kind {
  kReplayed = 1,        // the opening passed its checks and the step was replayed
  kUnavailable = 2,     // no opening (or no state file) reached the member in the window
  kInvalidOpening = 3,  // a check of the opening failed: `check` names it
};

// The process the member verified in, as pot's own replay reports it.
struct Environment {
  std::string framework_version;  // the replaying LibTorch's, "1.13.1"
  uint32_t intra_op_threads = 0;  // the threads the replay ran on
  std::string hardware_class;     // pot_replay_hardware_class of the process
  bool operator==(const Environment &) const = default;
};

// What one member found, and where: the part of a statement its reveal on
// the ledger carries (the ledger knows the challenge).
struct Finding {
  Environment environment;
  Kind kind = Kind::kReplayed;
  hash::Digest replayed_state;  // kReplayed: the replayed S_t's digest
  int64_t bucket = 0;           // kReplayed: the replayed update's norm bucket
  // kReplayed: the digest of the step's gradient (docs/PROTOCOL.md 21.3),
  // which only a replay gives: the miner never publishes it.
  hash::Digest gradient_digest;
  commit::OpeningCheck check = commit::OpeningCheck::kOk;  // kInvalidOpening
  bool operator==(const Finding &) const = default;

  // kInvalidArgument naming the field: a kind outside the enum, a
  // framework_version of 0 or more than 64 bytes, threads outside 1..1024,
  // a hardware_class of 0 or more than 256 bytes, an invalid_opening naming
  // a check outside 1..27, or 21 or 23 (those are what a replayed value
  // says: state it instead).
  void validate() const;
  // The keys "environment", "kind" and the kind's own ("replayed_state",
  // "bucket" and "gradient_digest"; "check"; none) of `j`, which holds `other` keys besides;
  // kInvalidArgument naming the key for anything else or missing.
  static Finding from_json(const nlohmann::json &j, const std::string &where, std::vector<const char *> other);
  // Adds the finding's keys to `j`.
  void add_json(nlohmann::json &j) const;
};

// A finding bound to the challenge it answers.
struct Statement {
  hash::Digest run_id;
  uint64_t step = 0;
  uint64_t challenge_id = 0;
  Mode mode = Mode::kBitwise;
  Finding finding;
  bool operator==(const Statement &) const = default;

  // Finding::validate, and kInvalidArgument for step 0 or a mode outside
  // the enum.
  void validate() const;
  // The JSON form (docs/PROTOCOL.md section 19): run_id, step,
  // challenge_id, mode and the finding's keys, no other.
  static Statement from_json(const nlohmann::json &j);
  nlohmann::json to_json() const;
};

// What a verification found (pot_verify_step: the first failed check, or
// kOk, and whether the step was replayed): the replayed value when the
// opening passed its checks and the replay ran to a value (kOk, or the
// value differing: checks 21 and 23), else the failed check. kInvalidArgument
// for kOk without a replay (no verification ran).
Finding finding_of(commit::OpeningCheck check, bool replayed, const hash::Digest &replayed_state, int64_t bucket,
                   const hash::Digest &gradient_digest, const Environment &environment);

const char *mode_name(Mode m) noexcept;     // "bitwise", "norm_bucket"
const char *kind_name(Kind k) noexcept;     // "replayed", "unavailable", "invalid_opening"

// tagged("pot/v2/witness", ...) of docs/PROTOCOL.md section 19.
// kInvalidArgument for an invalid statement, a salt outside 16..64 bytes or
// an identity outside 1..256 bytes.
hash::Digest witness_commitment(const Statement &s, ByteView salt, ByteView identity);

// 32 bytes from OpenSSL's CSPRNG (kBackend if it fails).
Bytes fresh_salt();

// Checks a reveal against a commitment: kProofMismatch unless statement,
// salt and identity are exactly those committed to (a reveal under another
// identity, or for another challenge, never opens the commitment).
void verify_reveal(const hash::Digest &commitment, const Statement &s, ByteView salt, ByteView identity);

// Whether the environment can judge a step of `spec` in `mode`, or why not:
// the framework release (major.minor) must be the spec's in either mode; a
// bitwise comparison also needs the spec's intra-op threads and hardware
// class (docs/PROTOCOL.md section 19).
std::optional<std::string> environment_mismatch(const Environment &e, const spec::ExecutionSpec &spec, Mode mode);

// Whether `version` ("1.13.1") is of the release `spec_version` names: the
// same major.minor ("1.13", "1.13.0" and "1.13.1" are one release).
bool same_framework_release(const std::string &version, const std::string &spec_version);

}  // namespace pot::witness
