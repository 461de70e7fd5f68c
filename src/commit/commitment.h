// The training commitment (docs/PROTOCOL.md section 17), made before
// training: what the run starts from, what it will train on and in which
// order, under which spec, for how many steps. The run id is its digest.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "hash/sha256.h"

namespace pot::commit {

// The protocol version this library implements (docs/PROTOCOL.md).
inline constexpr uint32_t kProtocolVersion = 2;
inline constexpr size_t kMaxIdentityBytes = 256;
inline constexpr size_t kMaxCommitmentBytes = 1024;

// kInvalidArgument "<context>miner_identity must be 1..256 bytes, not N"
// unless 1 <= len(miner) <= kMaxIdentityBytes: the commitment's rule, for
// callers that take an identity before they build a commitment from it.
void check_miner_identity(ByteView miner, std::string_view context = {});

struct TrainingCommitment {
  uint32_t protocol_version = kProtocolVersion;
  hash::Digest task_id;
  hash::Digest initial_state_digest;
  hash::Digest schedule_root;
  hash::Digest dataset_root;
  uint64_t dataset_size = 0;
  hash::Digest spec_digest;
  uint64_t declared_steps = 0;
  Bytes miner_identity;

  // kInvalidArgument naming the rule: version 2, steps >= 1, a non-empty
  // dataset, identity of 1..256 bytes.
  void validate() const;
  Bytes encode() const;                              // canonical pot.v2.TrainingCommitment
  // Strict, as ExecutionSpec::decode; another protocol_version is refused
  // (kUnsupported, naming it) before any other field is read.
  static TrainingCommitment decode(ByteView b);
  hash::Digest run_id() const;                       // tagged("pot/v2/run", encode())
  static TrainingCommitment from_json(const nlohmann::json &j);
  nlohmann::json to_json() const;
};

}  // namespace pot::commit
