#include "task/task.h"

#include "codec/canonical.h"
#include "commit/dataset.h"
#include "codec/json_fields.h"
#include "common/error.h"
#include "pot/v2/task.pb.h"

namespace pot::task {

namespace {

using codec::bytes_of;
using codec::digest_field;

[[noreturn]] void rule(const std::string &what) { throw Error(Status::kInvalidArgument, "task: " + what); }

void put(std::string *dst, const hash::Digest &d) {
  dst->assign(reinterpret_cast<const char *>(d.bytes.data()), d.bytes.size());
}

void check_version(uint32_t v) {
  if (v != commit::kProtocolVersion)
    fail(Status::kUnsupported, "task: protocol version {} is not supported (this SDK implements version {})", v,
         commit::kProtocolVersion);
}

ChallengeMode mode_from_name(const std::string &s, const std::string &path) {
  if (s == "bitwise") return ChallengeMode::kBitwise;
  if (s == "norm_bucket") return ChallengeMode::kNormBucket;
  fail(Status::kInvalidArgument, "{} must be \"bitwise\" or \"norm_bucket\", not \"{}\"", path, s);
}

}  // namespace

const char *challenge_mode_name(ChallengeMode m) noexcept {
  return m == ChallengeMode::kNormBucket ? "norm_bucket" : "bitwise";
}

void Task::validate() const {
  check_version(protocol_version);
  if (owner.empty() || owner.size() > kMaxOwnerBytes)
    rule(fmt::format("owner must be 1..{} bytes, not {}", kMaxOwnerBytes, owner.size()));
  spec.validate();
  if (dataset_size == 0) rule("dataset_size must be at least 1");
  if (min_steps == 0) rule("min_steps must be at least 1");
  if (max_steps < min_steps) rule(fmt::format("max_steps {} is below min_steps {}", max_steps, min_steps));
  // S_t records the rate of step t + 1, evaluated by walking the schedule.
  if (max_steps >= spec::kMaxLrStep)
    rule(fmt::format("max_steps {} is not below 2^32 (the learning-rate schedule's bound)", max_steps));
  if (schedule_rule == ScheduleRule::kListed) {
    // A listed schedule root commits to a fixed number of entries, and a run
    // has one entry per step.
    if (min_steps != max_steps)
      rule(fmt::format("a listed schedule fixes the number of steps: min_steps {} must equal max_steps {}", min_steps,
                       max_steps));
    // Every run of a listed task trains on the same samples in the same
    // order from the same S_0: only the per-step seeds, which name the run
    // (docs/PROTOCOL.md section 9), can make two runs differ, and only when
    // the steps draw random numbers. Without them (one_trajectory(), since
    // 0.3.0 a valid task: a dropout-free model reading its data in order)
    // the ledger keeps one training from being registered by several
    // identities (docs/ledger.md 2.3, 2.4).
  } else if (schedule_rule == ScheduleRule::kRunSeeded || schedule_rule == ScheduleRule::kRunSeededUniform) {
    const bool uniform = schedule_rule == ScheduleRule::kRunSeededUniform;
    if (schedule_root != hash::Digest{}) rule("a run-seeded schedule has no listed root");
    if (spec.batch_size % spec.grad_accum_microbatches != 0)
      rule(fmt::format("a run-seeded schedule splits each batch evenly: batch_size {} is not a multiple of {} "
                       "micro-batches",
                       spec.batch_size, spec.grad_accum_microbatches));
    // What the ledger recomputes for every run it registers (17.3): the
    // permutation of run_seeded walks the whole dataset, the uniform draws
    // only the run's positions.
    const uint64_t dataset_draws = uniform ? 0 : dataset_size;
    if (dataset_draws >= kMaxRunSeededDraws || max_steps > (kMaxRunSeededDraws - dataset_draws) / spec.batch_size)
      rule(fmt::format("a {} schedule of max_steps {} x batch_size {} over {} samples takes more than {} index "
                       "draws to recompute (kMaxRunSeededDraws){}",
                       uniform ? "run_seeded_uniform" : "run-seeded", max_steps, spec.batch_size, dataset_size,
                       kMaxRunSeededDraws,
                       uniform ? "" : "; run_seeded_uniform draws with replacement and has no dataset term"));
  } else {
    rule(fmt::format("schedule rule {} is not listed (1), run_seeded (2) or run_seeded_uniform (3)",
                     static_cast<int>(schedule_rule)));
  }
  if (challenge_rounds == 0 || challenge_rounds > kMaxChallengeRounds)
    rule(fmt::format("challenge_policy.rounds = {} is outside 1..{}", challenge_rounds, kMaxChallengeRounds));
  if (challenge_rounds > min_steps)
    rule(fmt::format("challenge_policy.rounds = {} exceeds min_steps {}: a run has fewer distinct steps",
                     challenge_rounds, min_steps));
  if (challenge_mode != ChallengeMode::kBitwise && challenge_mode != ChallengeMode::kNormBucket)
    rule(fmt::format("challenge_policy.mode {} is not bitwise (1) or norm_bucket (2)",
                     static_cast<int>(challenge_mode)));
  if (committee_size == 0 || committee_size > kMaxCommitteeSize)
    rule(fmt::format("challenge_policy.committee_size = {} is outside 1..{}", committee_size, kMaxCommitteeSize));
  if (end_height == 0) rule("end_height must be at least 1 (the last height at which runs register and seal)");
}

Bytes Task::encode() const {
  validate();
  v2::Task p;
  p.set_protocol_version(protocol_version);
  p.set_owner(std::string(owner.begin(), owner.end()));
  const Bytes s = spec.encode();
  p.set_spec(std::string(s.begin(), s.end()));
  put(p.mutable_dataset_root(), dataset_root);
  p.set_dataset_size(dataset_size);
  put(p.mutable_initial_state()->mutable_published_digest(), initial_state_digest);
  if (schedule_rule == ScheduleRule::kListed)
    put(p.mutable_schedule()->mutable_listed_root(), schedule_root);
  else if (schedule_rule == ScheduleRule::kRunSeeded)
    p.mutable_schedule()->mutable_run_seeded();
  else
    p.mutable_schedule()->mutable_run_seeded_uniform();
  p.set_min_steps(min_steps);
  p.set_max_steps(max_steps);
  p.mutable_challenge_policy()->set_rounds(challenge_rounds);
  p.mutable_challenge_policy()->set_mode(static_cast<v2::ChallengeMode>(challenge_mode));
  p.mutable_challenge_policy()->set_committee_size(committee_size);
  p.set_end_height(end_height);
  const std::string out = p.SerializeAsString();
  return Bytes(out.begin(), out.end());
}

Task Task::decode(ByteView b) {
  const auto p = codec::parse_bounded<v2::Task>(b, kMaxTaskBytes, "task");
  if (p.protocol_version() == 0) fail(Status::kMalformed, "task: protocol_version is missing");
  check_version(p.protocol_version());
  Task t;
  t.owner.assign(p.owner().begin(), p.owner().end());
  try {
    t.spec = spec::ExecutionSpec::decode(bytes_of(p.spec()));
  } catch (const Error &e) {
    throw Error(e.status(), std::string("task: ") + e.what());
  }
  t.dataset_root = digest_field(p.dataset_root(), "task: dataset_root");
  t.dataset_size = p.dataset_size();
  if (p.initial_state().rule_case() != v2::InitialStateRule::kPublishedDigest)
    fail(Status::kMalformed, "task: initial_state names no rule (published_digest is the one this version has)");
  t.initial_state_digest = digest_field(p.initial_state().published_digest(), "task: initial_state.published_digest");
  if (p.schedule().rule_case() == v2::ScheduleRule::kListedRoot) {
    t.schedule_rule = ScheduleRule::kListed;
    t.schedule_root = digest_field(p.schedule().listed_root(), "task: schedule.listed_root");
  } else if (p.schedule().rule_case() == v2::ScheduleRule::kRunSeeded) {
    t.schedule_rule = ScheduleRule::kRunSeeded;
  } else if (p.schedule().rule_case() == v2::ScheduleRule::kRunSeededUniform) {
    t.schedule_rule = ScheduleRule::kRunSeededUniform;
  } else {
    fail(Status::kMalformed, "task: schedule names no rule (listed_root, run_seeded or run_seeded_uniform)");
  }
  t.min_steps = p.min_steps();
  t.max_steps = p.max_steps();
  t.challenge_rounds = p.challenge_policy().rounds();
  t.challenge_mode = static_cast<ChallengeMode>(p.challenge_policy().mode());
  t.committee_size = p.challenge_policy().committee_size();
  t.end_height = p.end_height();
  t.validate();
  codec::require_canonical(t.encode(), b, "task");
  return t;
}

hash::Digest Task::id() const {
  const Bytes b = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/task");
  return h.update(b).finish();
}

Task Task::from_json(const nlohmann::json &j) {
  const codec::JsonFields f(j, "task");
  f.only({"protocol_version", "owner", "spec", "dataset_root", "dataset_size", "initial_state", "schedule",
          "min_steps", "max_steps", "challenge_policy", "end_height"});
  Task t;
  t.protocol_version = f.has("protocol_version") ? f.u32("protocol_version") : commit::kProtocolVersion;
  check_version(t.protocol_version);
  t.owner = f.hex("owner");
  t.spec = spec::ExecutionSpec::from_json(f.object("spec"));
  t.dataset_root = f.digest("dataset_root");
  t.dataset_size = f.u64("dataset_size");
  const codec::JsonFields init(f.object("initial_state"), "task.initial_state");
  init.only({"published_digest"});
  t.initial_state_digest = init.digest("published_digest");
  const codec::JsonFields sched(f.object("schedule"), "task.schedule");
  sched.only({"listed_root", "run_seeded", "run_seeded_uniform"});
  if (sched.has("listed_root") + sched.has("run_seeded") + sched.has("run_seeded_uniform") != 1)
    fail(Status::kInvalidArgument,
         "task.schedule must hold exactly one of listed_root, run_seeded and run_seeded_uniform");
  if (sched.has("listed_root")) {
    t.schedule_root = sched.digest("listed_root");
  } else if (sched.has("run_seeded")) {
    codec::JsonFields(sched.object("run_seeded"), "task.schedule.run_seeded").only({});
    t.schedule_rule = ScheduleRule::kRunSeeded;
  } else {
    codec::JsonFields(sched.object("run_seeded_uniform"), "task.schedule.run_seeded_uniform").only({});
    t.schedule_rule = ScheduleRule::kRunSeededUniform;
  }
  t.min_steps = f.u64("min_steps");
  t.max_steps = f.u64("max_steps");
  const codec::JsonFields pol(f.object("challenge_policy"), "task.challenge_policy");
  pol.only({"rounds", "mode", "committee_size"});
  t.challenge_rounds = pol.u32("rounds");
  t.challenge_mode = mode_from_name(pol.str("mode"), pol.path("mode"));
  t.committee_size = pol.u32("committee_size");
  t.end_height = f.u64("end_height");
  t.validate();
  return t;
}

nlohmann::json Task::to_json() const {
  return {{"protocol_version", protocol_version},
          {"owner", to_hex(owner)},
          {"spec", spec.to_json()},
          {"dataset_root", dataset_root.hex()},
          {"dataset_size", dataset_size},
          {"initial_state", {{"published_digest", initial_state_digest.hex()}}},
          {"schedule", schedule_rule == ScheduleRule::kListed
                           ? nlohmann::json{{"listed_root", schedule_root.hex()}}
                           : nlohmann::json{{schedule_rule == ScheduleRule::kRunSeeded ? "run_seeded"
                                                                                        : "run_seeded_uniform",
                                             nlohmann::json::object()}}},
          {"min_steps", min_steps},
          {"max_steps", max_steps},
          {"challenge_policy",
           {{"rounds", challenge_rounds},
            {"mode", challenge_mode_name(challenge_mode)},
            {"committee_size", committee_size}}},
          {"end_height", end_height}};
}

uint64_t run_schedule_seed(const hash::Digest &task_id, ByteView miner, uint64_t declared_steps) {
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/run-schedule");
  h.update(task_id.view()).update_u32le(static_cast<uint32_t>(miner.size())).update(miner);
  return get_u64le(h.update_u64le(declared_steps).finish().bytes.data());
}

void check_steps(const Task &task, const hash::Digest &id, uint64_t declared_steps) {
  if (declared_steps < task.min_steps || declared_steps > task.max_steps)
    fail(Status::kOutOfRange, "task {}: declared_steps {} is outside {}..{} (its min_steps..max_steps)", id.hex(),
         declared_steps, task.min_steps, task.max_steps);
}

hash::Digest schedule_root_for(const Task &task, const hash::Digest &id, ByteView miner, uint64_t declared_steps) {
  if (task.schedule_rule == ScheduleRule::kListed) return task.schedule_root;
  if (task.schedule_rule == ScheduleRule::kRunSeededUniform)
    return commit::uniform_schedule_root(run_schedule_seed(id, miner, declared_steps), task.dataset_size,
                                         task.spec.batch_size, task.spec.grad_accum_microbatches, declared_steps);
  return commit::seeded_schedule_root(run_schedule_seed(id, miner, declared_steps), task.dataset_size,
                                      task.spec.batch_size, task.spec.grad_accum_microbatches, declared_steps);
}

commit::TrainingCommitment commitment_for(const Task &task, ByteView miner, uint64_t declared_steps) {
  commit::TrainingCommitment c;
  c.task_id = task.id();
  check_steps(task, c.task_id, declared_steps);
  c.initial_state_digest = task.initial_state_digest;
  c.schedule_root = schedule_root_for(task, c.task_id, miner, declared_steps);
  c.dataset_root = task.dataset_root;
  c.dataset_size = task.dataset_size;
  c.spec_digest = task.spec.digest();
  c.declared_steps = declared_steps;
  c.miner_identity.assign(miner.begin(), miner.end());
  return c;
}

void check_commitment(const Task &task, const commit::TrainingCommitment &c, bool recompute_run_schedule) {
  const hash::Digest id = task.id();
  auto differs = [&](const char *field, const std::string &got, const std::string &want) {
    fail(Status::kInvalidArgument, "commitment does not match task {}: {} is {}, the task fixes {}", id.hex(), field,
         got, want);
  };
  check_steps(task, id, c.declared_steps);
  if (c.task_id != id) differs("task_id", c.task_id.hex(), id.hex());
  if (c.initial_state_digest != task.initial_state_digest)
    differs("initial_state_digest", c.initial_state_digest.hex(), task.initial_state_digest.hex());
  if (task.schedule_rule == ScheduleRule::kListed) {
    if (c.schedule_root != task.schedule_root)
      differs("schedule_root", c.schedule_root.hex(), task.schedule_root.hex());
  } else if (recompute_run_schedule) {
    // Another miner's (or another step count's) order is not this run's.
    const hash::Digest want = schedule_root_for(task, id, c.miner_identity, c.declared_steps);
    if (c.schedule_root != want)
      fail(Status::kInvalidArgument,
           "commitment does not match task {}: schedule_root is {}, the {} schedule of this miner and {} steps "
           "has root {} (docs/PROTOCOL.md 17.3)",
           id.hex(), c.schedule_root.hex(),
           task.schedule_rule == ScheduleRule::kRunSeeded ? "run-seeded" : "run_seeded_uniform", c.declared_steps,
           want.hex());
  }
  if (c.dataset_root != task.dataset_root) differs("dataset_root", c.dataset_root.hex(), task.dataset_root.hex());
  if (c.dataset_size != task.dataset_size)
    differs("dataset_size", std::to_string(c.dataset_size), std::to_string(task.dataset_size));
  const hash::Digest spec = task.spec.digest();
  if (c.spec_digest != spec) differs("spec_digest", c.spec_digest.hex(), spec.hex());
}

}  // namespace pot::task
