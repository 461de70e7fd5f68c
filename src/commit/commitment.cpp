#include "commit/commitment.h"

#include "codec/canonical.h"
#include "codec/json_fields.h"
#include "common/error.h"
#include "pot/v2/commitment.pb.h"

namespace pot::commit {

namespace {

void set(std::string *dst, const hash::Digest &d) { dst->assign(reinterpret_cast<const char *>(d.bytes.data()), 32); }

}  // namespace

void TrainingCommitment::validate() const {
  auto rule = [](const std::string &m) { throw Error(Status::kInvalidArgument, "commitment: " + m); };
  if (protocol_version != kProtocolVersion)
    throw Error(Status::kUnsupported, fmt::format("commitment: protocol version {} is not supported (this SDK "
                                                  "implements version {})",
                                                  protocol_version, kProtocolVersion));
  if (declared_steps == 0) rule("declared_steps must be at least 1");
  if (dataset_size == 0) rule("dataset_size must be at least 1");
  check_miner_identity(miner_identity, "commitment: ");
}

void check_miner_identity(ByteView miner, std::string_view context) {
  if (miner.empty() || miner.size() > kMaxIdentityBytes)
    throw Error(Status::kInvalidArgument, fmt::format("{}miner_identity must be 1..{} bytes, not {}", context,
                                                      kMaxIdentityBytes, miner.size()));
}

Bytes TrainingCommitment::encode() const {
  validate();
  v2::TrainingCommitment p;
  p.set_protocol_version(protocol_version);
  set(p.mutable_task_id(), task_id);
  set(p.mutable_initial_state_digest(), initial_state_digest);
  set(p.mutable_schedule_root(), schedule_root);
  set(p.mutable_dataset_root(), dataset_root);
  p.set_dataset_size(dataset_size);
  set(p.mutable_spec_digest(), spec_digest);
  p.set_declared_steps(declared_steps);
  p.set_miner_identity(std::string(miner_identity.begin(), miner_identity.end()));
  const std::string s = p.SerializeAsString();
  return Bytes(s.begin(), s.end());
}

TrainingCommitment TrainingCommitment::decode(ByteView b) {
  const auto p = codec::parse_bounded<v2::TrainingCommitment>(b, kMaxCommitmentBytes, "commitment");
  TrainingCommitment c;
  // The version decides how the other fields read: a version 1 commitment
  // (field 4 was schedule_length) is refused here, naming its version.
  c.protocol_version = p.protocol_version();
  if (c.protocol_version == 0) fail(Status::kMalformed, "commitment: protocol_version is missing");
  if (c.protocol_version != kProtocolVersion) c.validate();
  c.task_id = codec::digest_field(p.task_id(), "commitment: task_id");
  c.initial_state_digest = codec::digest_field(p.initial_state_digest(), "commitment: initial_state_digest");
  c.schedule_root = codec::digest_field(p.schedule_root(), "commitment: schedule_root");
  c.dataset_root = codec::digest_field(p.dataset_root(), "commitment: dataset_root");
  c.dataset_size = p.dataset_size();
  c.spec_digest = codec::digest_field(p.spec_digest(), "commitment: spec_digest");
  c.declared_steps = p.declared_steps();
  c.miner_identity.assign(p.miner_identity().begin(), p.miner_identity().end());
  c.validate();
  codec::require_canonical(c.encode(), b, "commitment");
  return c;
}

hash::Digest TrainingCommitment::run_id() const {
  const Bytes b = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/run");
  return h.update(b).finish();
}

TrainingCommitment TrainingCommitment::from_json(const nlohmann::json &j) {
  const codec::JsonFields f(j, "commitment");
  f.only({"protocol_version", "task_id", "initial_state_digest", "schedule_root", "dataset_root", "dataset_size",
          "spec_digest", "declared_steps", "miner_identity"});
  TrainingCommitment c;
  c.protocol_version = f.has("protocol_version") ? f.u32("protocol_version") : kProtocolVersion;
  c.task_id = f.digest("task_id");
  c.initial_state_digest = f.digest("initial_state_digest");
  c.schedule_root = f.digest("schedule_root");
  c.dataset_root = f.digest("dataset_root");
  c.dataset_size = f.u64("dataset_size");
  c.spec_digest = f.digest("spec_digest");
  c.declared_steps = f.u64("declared_steps");
  c.miner_identity = f.hex("miner_identity");
  c.validate();
  return c;
}

nlohmann::json TrainingCommitment::to_json() const {
  return {{"protocol_version", protocol_version},
          {"task_id", task_id.hex()},
          {"initial_state_digest", initial_state_digest.hex()},
          {"schedule_root", schedule_root.hex()},
          {"dataset_root", dataset_root.hex()},
          {"dataset_size", dataset_size},
          {"spec_digest", spec_digest.hex()},
          {"declared_steps", declared_steps},
          {"miner_identity", to_hex(miner_identity)}};
}

}  // namespace pot::commit
