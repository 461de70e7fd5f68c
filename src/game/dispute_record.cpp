#include "game/dispute_record.h"

#include <algorithm>

#include "common/byte_reader.h"
#include "common/error.h"

namespace pot::game {

using hash::Digest;

const char *dispute_phase_name(DisputePhase p) noexcept {
  switch (p) {
    case DisputePhase::kSteps: return "steps";
    case DisputePhase::kTraces: return "traces";
    case DisputePhase::kOperators: return "operators";
    case DisputePhase::kOpenings: return "openings";
    case DisputePhase::kReferee: return "referee";
  }
  return "unknown";
}

const char *dispute_end_name(DisputeEnd e) noexcept {
  switch (e) {
    case DisputeEnd::kStepFound: return "step_found";
    case DisputeEnd::kMinerDefault: return "miner_default";
    case DisputeEnd::kChallengerDefault: return "challenger_default";
    case DisputeEnd::kBothDefault: return "both_default";
    case DisputeEnd::kRuled: return "ruled";
    case DisputeEnd::kRefereeRuled: return "referee_ruled";
    case DisputeEnd::kRefereeDefault: return "referee_default";
  }
  return "unknown";
}

const char *dispute_rule_name(DisputeRule r) noexcept {
  switch (r) {
    case DisputeRule::kNone: return "";
    case DisputeRule::kOpening: return "opening";
    case DisputeRule::kSource: return "source";
    case DisputeRule::kOperator: return "operator";
    case DisputeRule::kPostState: return "post_state";
    case DisputeRule::kStep: return "step";
  }
  return "unknown";
}

DisputeRule dispute_rule_from_name(std::string_view name) {
  for (uint8_t r = 1; r <= static_cast<uint8_t>(DisputeRule::kStep); ++r)
    if (name == dispute_rule_name(static_cast<DisputeRule>(r))) return static_cast<DisputeRule>(r);
  fail(Status::kInvalidArgument, "'{}' is not a rule (opening, source, operator, post_state, step)", name);
}

bool is_dispute_record(ByteView record) noexcept {
  if (record.empty() || record[0] > record.size() - 1) return false;
  const std::string_view tag(reinterpret_cast<const char *>(record.data() + 1), record[0]);
  return tag.starts_with("pot/v") && tag.ends_with("/dispute-outcome");
}

Bytes DisputeRecord::encode() const {
  Bytes out;
  out.reserve(kDisputeRecordFixedBytes + miner.size() + challenger.size());
  put_u8(out, static_cast<uint8_t>(kDisputeRecordTag.size()));
  put_str(out, kDisputeRecordTag);
  put_u64le(out, dispute_id);
  put_bytes(out, run_id.view());
  put_u32le(out, static_cast<uint32_t>(miner.size()));
  put_bytes(out, miner);
  put_u32le(out, static_cast<uint32_t>(challenger.size()));
  put_bytes(out, challenger);
  put_u64le(out, lo);
  put_u64le(out, hi);
  put_u8(out, static_cast<uint8_t>(end));
  put_u8(out, static_cast<uint8_t>(phase));
  put_u8(out, losers);
  put_u32le(out, rounds);
  put_u64le(out, step);
  put_bytes(out, agreed.view());
  put_bytes(out, miner_digest.view());
  put_bytes(out, challenger_digest.view());
  for (const TraceCommitment *t : {&miner_trace, &challenger_trace}) {
    put_u64le(out, t->size);
    put_bytes(out, t->root.view());
  }
  put_u32le(out, op_rounds);
  put_u64le(out, node);
  put_u8(out, static_cast<uint8_t>(rule));
  return out;
}

namespace {

constexpr const char *kRecordWhat = "dispute record";

void read_tag(ByteReader &r) {
  const uint8_t tag_len = r.u8("the tag length");
  const ByteView tag = r.take(tag_len, "the tag");
  const std::string_view tag_text(reinterpret_cast<const char *>(tag.data()), tag.size());
  if (tag_text == kDisputeRecordTag) return;
  if (tag_text.starts_with("pot/v") && tag_text.ends_with("/dispute-outcome"))
    fail(Status::kMalformed, "{} of tag '{}': this SDK reads '{}' (protocol version 3)", kRecordWhat, tag_text,
         kDisputeRecordTag);
  fail(Status::kMalformed, "{} does not start with the tag '{}'", kRecordWhat, kDisputeRecordTag);
}

Bytes read_identity(ByteReader &r, const char *what) {
  const uint32_t len = r.u32(what);
  if (len == 0 || len > witness::kMaxIdentity)
    fail(Status::kMalformed, "{}: {} of {} bytes, expected 1..{}", kRecordWhat, what, len, witness::kMaxIdentity);
  const ByteView v = r.take(len, what);
  return Bytes(v.begin(), v.end());
}

// The fields in their order (docs/PROTOCOL.md 20.2), each within its range.
DisputeRecord read_fields(ByteReader &r) {
  DisputeRecord d;
  d.dispute_id = r.u64("dispute_id");
  d.run_id = Digest::from_bytes(r.take(32, "run_id"));
  d.miner = read_identity(r, "miner");
  d.challenger = read_identity(r, "challenger");
  if (d.miner == d.challenger) fail(Status::kMalformed, "{}: the miner is its own challenger", kRecordWhat);
  d.lo = r.u64("lo");
  d.hi = r.u64("hi");
  if (d.lo >= d.hi) fail(Status::kMalformed, "{}: lo {} is not below hi {}", kRecordWhat, d.lo, d.hi);
  const uint8_t end = r.u8("end");
  if (end < 1 || end > 7) fail(Status::kMalformed, "{}: end {} is not 1..7", kRecordWhat, end);
  d.end = static_cast<DisputeEnd>(end);
  const uint8_t phase = r.u8("phase");
  if (phase < 1 || phase > 5) fail(Status::kMalformed, "{}: phase {} is not 1..5", kRecordWhat, phase);
  d.phase = static_cast<DisputePhase>(phase);
  d.losers = r.u8("losers");
  if (d.losers > 3) fail(Status::kMalformed, "{}: losers {} is not 0..3", kRecordWhat, d.losers);
  d.rounds = r.u32("rounds");
  d.step = r.u64("step");
  d.agreed = Digest::from_bytes(r.take(32, "agreed"));
  d.miner_digest = Digest::from_bytes(r.take(32, "miner_digest"));
  d.challenger_digest = Digest::from_bytes(r.take(32, "challenger_digest"));
  for (TraceCommitment *t : {&d.miner_trace, &d.challenger_trace}) {
    t->size = r.u64("a trace size");
    t->root = Digest::from_bytes(r.take(32, "a trace root"));
  }
  d.op_rounds = r.u32("op_rounds");
  d.node = r.u64("node");
  const uint8_t rule = r.u8("rule");
  if (rule > 5) fail(Status::kMalformed, "{}: rule {} is not 0..5", kRecordWhat, rule);
  d.rule = static_cast<DisputeRule>(rule);
  if (r.remaining() != 0) fail(Status::kMalformed, "{}: {} bytes after the rule", kRecordWhat, r.remaining());
  return d;
}

// kMalformed: a field the ledger does not write so for this end and phase.
[[noreturn]] void not_as_written(const DisputeRecord &d, const char *why) {
  fail(Status::kMalformed, "{}: end {} in phase {}: {}", kRecordWhat, dispute_end_name(d.end),
       dispute_phase_name(d.phase), why);
}

// The phase each end happens in, its losers and its rule.
void check_end(const DisputeRecord &d) {
  const DisputePhase p = d.phase;
  auto require = [&](bool ok, const char *why) {
    if (!ok) not_as_written(d, why);
  };
  switch (d.end) {
    case DisputeEnd::kStepFound:
      require(p == DisputePhase::kSteps, "a step found without a referee ends the step phase");
      require(d.losers == 0, "no party loses");
      break;
    case DisputeEnd::kMinerDefault:
    case DisputeEnd::kChallengerDefault:
    case DisputeEnd::kBothDefault: {
      const uint8_t missed = d.end == DisputeEnd::kMinerDefault        ? kLoserMiner
                             : d.end == DisputeEnd::kChallengerDefault ? kLoserChallenger
                                                                       : kLoserMiner | kLoserChallenger;
      require(p != DisputePhase::kReferee, "the parties have no deadline in the referee phase");
      require(d.losers == missed, "the losers are not the parties that missed the deadline");
      break;
    }
    case DisputeEnd::kRuled:
      require(p == DisputePhase::kOpenings, "the ledger rules on the openings");
      require(d.losers != 0, "a ruling names a loser");
      require(d.rule == DisputeRule::kOpening || d.rule == DisputeRule::kSource || d.rule == DisputeRule::kPostState,
              "the ledger rules by opening, source or post_state");
      break;
    case DisputeEnd::kRefereeRuled:
      require(p == DisputePhase::kReferee, "the referee rules in the referee phase");
      require(d.losers != 0, "a ruling names a loser");
      require(d.rule == DisputeRule::kSource || d.rule == DisputeRule::kOperator || d.rule == DisputeRule::kStep,
              "the referee rules by source, operator or step");
      break;
    case DisputeEnd::kRefereeDefault:
      require(p == DisputePhase::kReferee, "only the referee phase ends by the referee's default");
      require(d.losers == 0, "no party loses");
      break;
  }
  require(d.end == DisputeEnd::kRuled || d.end == DisputeEnd::kRefereeRuled || d.rule == DisputeRule::kNone,
          "only a ruling names a rule");
}

// The step, the traces and the node: set from the phase that finds them on.
void check_phase_fields(const DisputeRecord &d) {
  const DisputePhase p = d.phase;
  const bool found = d.end == DisputeEnd::kStepFound || p != DisputePhase::kSteps;
  if (found) {
    if (d.step <= d.lo || d.step > d.hi)
      fail(Status::kMalformed, "{}: step {} is outside the disputed interval ({}, {}]", kRecordWhat, d.step, d.lo,
           d.hi);
    if (d.miner_digest == d.challenger_digest)
      fail(Status::kMalformed, "{}: the parties' digests of step {} are equal: nothing is disputed", kRecordWhat,
           d.step);
  } else if (d.step != 0 || d.agreed != Digest{} || d.miner_digest != Digest{} || d.challenger_digest != Digest{}) {
    not_as_written(d, "the step fields are zero before the step is found");
  }
  for (const TraceCommitment *t : {&d.miner_trace, &d.challenger_trace}) {
    if (t->size == 0 && t->root != Digest{}) not_as_written(d, "a trace root without a size");
    if (p < DisputePhase::kTraces && t->size != 0) not_as_written(d, "no trace is committed before the traces phase");
    if (p > DisputePhase::kTraces && t->size == 0)
      not_as_written(d, "both traces are committed after the traces phase");
  }
  if (p < DisputePhase::kOperators && d.op_rounds != 0)
    not_as_written(d, "no operator round is played before the operators phase");
  if (p >= DisputePhase::kOpenings) {
    if (d.node >= std::max(d.miner_trace.size, d.challenger_trace.size))
      fail(Status::kMalformed, "{}: node {} is past both traces ({} and {} nodes)", kRecordWhat, d.node,
           d.miner_trace.size, d.challenger_trace.size);
  } else if (d.node != 0) {
    not_as_written(d, "the node is zero before the openings phase");
  }
}

}  // namespace

DisputeRecord DisputeRecord::decode(ByteView b) {
  if (b.size() > kMaxDisputeRecordBytes)
    fail(Status::kLimit, "{} of {} bytes, the limit is {}", kRecordWhat, b.size(), kMaxDisputeRecordBytes);
  ByteReader r(b, kRecordWhat);
  read_tag(r);
  const DisputeRecord d = read_fields(r);
  // Every field as the ledger writes it for this end and phase.
  check_end(d);
  check_phase_fields(d);
  return d;
}

std::vector<std::string> DisputeRecord::loser_names() const {
  std::vector<std::string> out;
  if (losers & kLoserMiner) out.push_back("miner");
  if (losers & kLoserChallenger) out.push_back("challenger");
  return out;
}

nlohmann::json DisputeRecord::to_json() const {
  const bool found = end == DisputeEnd::kStepFound || phase != DisputePhase::kSteps;
  auto digest = [&](const Digest &d) { return found ? nlohmann::json(d.hex()) : nlohmann::json(nullptr); };
  auto trace = [](const TraceCommitment &t) {
    return t.size == 0 ? nlohmann::json(nullptr) : nlohmann::json{{"size", t.size}, {"root", t.root.hex()}};
  };
  return {{"dispute_id", dispute_id},
          {"run_id", run_id.hex()},
          {"miner", to_hex(miner)},
          {"challenger", to_hex(challenger)},
          {"lo", lo},
          {"hi", hi},
          {"end", dispute_end_name(end)},
          {"phase", dispute_phase_name(phase)},
          {"rounds", rounds},
          {"step", found ? nlohmann::json(step) : nlohmann::json(nullptr)},
          {"agreed", digest(agreed)},
          {"miner_digest", digest(miner_digest)},
          {"challenger_digest", digest(challenger_digest)},
          {"miner_trace", trace(miner_trace)},
          {"challenger_trace", trace(challenger_trace)},
          {"op_rounds", op_rounds},
          {"node", phase >= DisputePhase::kOpenings ? nlohmann::json(node) : nlohmann::json(nullptr)},
          {"rule", rule == DisputeRule::kNone ? nlohmann::json(nullptr) : nlohmann::json(dispute_rule_name(rule))},
          {"losers", loser_names()}};
}

}  // namespace pot::game
static_assert(pot::game::kMaxDisputeRecordBytes == 803, "include/pot.h documents the limit");
