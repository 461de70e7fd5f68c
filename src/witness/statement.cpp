#include "witness/statement.h"

#include <openssl/rand.h>

#include "codec/json_fields.h"
#include "common/error.h"

namespace pot::witness {

namespace {

constexpr uint32_t kLastCheck = static_cast<uint32_t>(commit::kLastOpeningCheck);

// The checks a replayed value states itself (its digest, its bucket).
bool stated_by_value(commit::OpeningCheck c) {
  return c == commit::OpeningCheck::kReplayedState || c == commit::OpeningCheck::kReplayedBucket;
}

commit::OpeningCheck check_by_name(const std::string &name, const std::string &path) {
  for (uint32_t i = 1; i <= kLastCheck; ++i) {
    const auto c = static_cast<commit::OpeningCheck>(i);
    if (name == commit::opening_check_name(c)) return c;
  }
  fail(Status::kInvalidArgument, "{}: '{}' is not an opening check name", path, name);
}

// The release a version names: up to its second dot ("1.13.1" -> "1.13").
std::string_view release_of(std::string_view v) {
  const size_t first = v.find('.');
  if (first == std::string_view::npos) return v;
  return v.substr(0, v.find('.', first + 1));
}

void update_str(hash::Sha256 &h, const std::string &s) {
  h.update_u32le(static_cast<uint32_t>(s.size())).update(s.data(), s.size());
}

}  // namespace

const char *mode_name(Mode m) noexcept {
  switch (m) {
    case Mode::kBitwise: return "bitwise";
    case Mode::kNormBucket: return "norm_bucket";
  }
  return "unknown";
}

const char *kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::kReplayed: return "replayed";
    case Kind::kUnavailable: return "unavailable";
    case Kind::kInvalidOpening: return "invalid_opening";
  }
  return "unknown";
}

void Finding::validate() const {
  const Environment &e = environment;
  if (e.framework_version.empty() || e.framework_version.size() > kMaxFrameworkVersion)
    fail(Status::kInvalidArgument, "witness statement: environment.framework_version of {} bytes, expected 1..{}",
         e.framework_version.size(), kMaxFrameworkVersion);
  if (e.intra_op_threads == 0 || e.intra_op_threads > kMaxIntraOpThreads)
    fail(Status::kInvalidArgument, "witness statement: environment.intra_op_threads {}, expected 1..{}",
         e.intra_op_threads, kMaxIntraOpThreads);
  if (e.hardware_class.empty() || e.hardware_class.size() > kMaxHardwareClass)
    fail(Status::kInvalidArgument, "witness statement: environment.hardware_class of {} bytes, expected 1..{}",
         e.hardware_class.size(), kMaxHardwareClass);
  switch (kind) {
    case Kind::kReplayed:
    case Kind::kUnavailable:
      return;
    case Kind::kInvalidOpening: {
      const auto n = static_cast<uint32_t>(check);
      if (n == 0 || n > kLastCheck)
        fail(Status::kInvalidArgument, "witness statement: invalid_opening names check {}, expected 1..{}", n,
             kLastCheck);
      if (stated_by_value(check))
        fail(Status::kInvalidArgument,
             "witness statement: check {} ({}) is what a replayed value states: state kind 'replayed' with the "
             "replayed value instead",
             n, commit::opening_check_name(check));
      return;
    }
  }
  fail(Status::kInvalidArgument, "witness statement: kind {} is not replayed (1), unavailable (2) or invalid_opening (3)",
       static_cast<int>(kind));
}

Finding Finding::from_json(const nlohmann::json &j, const std::string &where, std::vector<const char *> other) {
  codec::JsonFields f(j, where);
  Finding out;
  other.push_back("environment");
  other.push_back("kind");
  const std::string kind = f.str("kind");
  if (kind == "replayed") {
    other.push_back("replayed_state");
    other.push_back("bucket");
    other.push_back("gradient_digest");
    f.only(other);
    out.kind = Kind::kReplayed;
    out.replayed_state = f.digest("replayed_state");
    out.bucket = f.i64("bucket");
    out.gradient_digest = f.digest("gradient_digest");
  } else if (kind == "unavailable") {
    f.only(other);
    out.kind = Kind::kUnavailable;
  } else if (kind == "invalid_opening") {
    other.push_back("check");
    f.only(other);
    out.kind = Kind::kInvalidOpening;
    out.check = check_by_name(f.str("check"), f.path("check"));
  } else {
    fail(Status::kInvalidArgument, "{}: '{}' is not replayed, unavailable or invalid_opening", f.path("kind"), kind);
  }
  codec::JsonFields e(f.object("environment"), f.path("environment"));
  e.only({"framework_version", "intra_op_threads", "hardware_class"});
  out.environment.framework_version = e.str("framework_version");
  out.environment.intra_op_threads = e.u32("intra_op_threads");
  out.environment.hardware_class = e.str("hardware_class");
  out.validate();
  return out;
}

void Finding::add_json(nlohmann::json &j) const {
  j["environment"] = {{"framework_version", environment.framework_version},
                      {"intra_op_threads", environment.intra_op_threads},
                      {"hardware_class", environment.hardware_class}};
  j["kind"] = kind_name(kind);
  if (kind == Kind::kReplayed) {
    j["replayed_state"] = replayed_state.hex();
    j["bucket"] = bucket;
    j["gradient_digest"] = gradient_digest.hex();
  } else if (kind == Kind::kInvalidOpening) {
    j["check"] = commit::opening_check_name(check);
  }
}

Finding finding_of(commit::OpeningCheck check, bool replayed, const hash::Digest &replayed_state, int64_t bucket,
                   const hash::Digest &gradient_digest, const Environment &environment) {
  Finding f;
  f.environment = environment;
  if (replayed && (check == commit::OpeningCheck::kOk || stated_by_value(check))) {
    f.kind = Kind::kReplayed;
    f.replayed_state = replayed_state;
    f.bucket = bucket;
    f.gradient_digest = gradient_digest;
  } else if (check == commit::OpeningCheck::kOk) {
    fail(Status::kInvalidArgument, "witness statement: the verification passed no check and replayed nothing");
  } else {
    f.kind = Kind::kInvalidOpening;
    f.check = check;
  }
  f.validate();
  return f;
}

void Statement::validate() const {
  if (step == 0) fail(Status::kInvalidArgument, "witness statement: steps are numbered from 1");
  if (mode != Mode::kBitwise && mode != Mode::kNormBucket)
    fail(Status::kInvalidArgument, "witness statement: mode {} is not bitwise (1) or norm_bucket (2)",
         static_cast<int>(mode));
  finding.validate();
}

Statement Statement::from_json(const nlohmann::json &j) {
  Statement s;
  s.finding = Finding::from_json(j, "witness statement", {"run_id", "step", "challenge_id", "mode"});
  codec::JsonFields f(j, "witness statement");
  s.run_id = f.digest("run_id");
  s.step = f.u64("step");
  s.challenge_id = f.u64("challenge_id");
  const std::string mode = f.str("mode");
  if (mode == "bitwise") s.mode = Mode::kBitwise;
  else if (mode == "norm_bucket") s.mode = Mode::kNormBucket;
  else fail(Status::kInvalidArgument, "{}: '{}' is not bitwise or norm_bucket", f.path("mode"), mode);
  s.validate();
  return s;
}

nlohmann::json Statement::to_json() const {
  nlohmann::json j = {{"run_id", run_id.hex()}, {"step", step}, {"challenge_id", challenge_id}, {"mode", mode_name(mode)}};
  finding.add_json(j);
  return j;
}

hash::Digest witness_commitment(const Statement &s, ByteView salt, ByteView identity) {
  s.validate();
  if (salt.size() < kMinSalt || salt.size() > kMaxSalt)
    fail(Status::kInvalidArgument, "witness: salt of {} bytes, expected {}..{}", salt.size(), kMinSalt, kMaxSalt);
  if (identity.empty() || identity.size() > kMaxIdentity)
    fail(Status::kInvalidArgument, "witness: identity of {} bytes, expected 1..{}", identity.size(), kMaxIdentity);
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/witness");
  h.update(s.run_id.view()).update_u64le(s.step).update_u64le(s.challenge_id);
  h.update_u8(static_cast<uint8_t>(s.mode));
  const Finding &f = s.finding;
  update_str(h, f.environment.framework_version);
  h.update_u32le(f.environment.intra_op_threads);
  update_str(h, f.environment.hardware_class);
  h.update_u8(static_cast<uint8_t>(f.kind));
  if (f.kind == Kind::kReplayed) {
    h.update(f.replayed_state.view()).update_u64le(static_cast<uint64_t>(f.bucket));
    h.update(f.gradient_digest.view());
  } else if (f.kind == Kind::kInvalidOpening) {
    h.update_u32le(static_cast<uint32_t>(f.check));
  }
  h.update_u32le(static_cast<uint32_t>(salt.size())).update(salt);
  h.update_u32le(static_cast<uint32_t>(identity.size())).update(identity);
  return h.finish();
}

Bytes fresh_salt() {
  Bytes s(32);
  if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) fail(Status::kBackend, "OpenSSL RAND_bytes failed");
  return s;
}

void verify_reveal(const hash::Digest &commitment, const Statement &s, ByteView salt, ByteView identity) {
  if (witness_commitment(s, salt, identity) == commitment) return;
  fail(Status::kProofMismatch,
       "witness reveal does not open the commitment (another statement, challenge, salt or identity than "
       "committed)");
}

bool same_framework_release(const std::string &version, const std::string &spec_version) {
  return release_of(version) == release_of(spec_version);
}

std::optional<std::string> environment_mismatch(const Environment &e, const spec::ExecutionSpec &spec, Mode mode) {
  if (!same_framework_release(e.framework_version, spec.framework_version))
    return fmt::format("framework_version {} is not of the spec's release {}", e.framework_version,
                       spec.framework_version);
  // pot-repro/1 (PROTOCOL 14.6) gives the step's bits on every thread
  // count and hardware class: a bitwise statement made on any judges it.
  if (mode == Mode::kNormBucket || spec.reproducible()) return std::nullopt;
  if (e.intra_op_threads != spec.intra_op_threads)
    return fmt::format("bitwise on {} intra-op threads, the spec's are {}", e.intra_op_threads,
                       spec.intra_op_threads);
  if (e.hardware_class != spec.hardware_class)
    return fmt::format("bitwise on hardware class {}, the spec's is {}", e.hardware_class, spec.hardware_class);
  return std::nullopt;
}

}  // namespace pot::witness
