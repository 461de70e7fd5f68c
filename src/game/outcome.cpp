#include "game/outcome.h"

#include <algorithm>
#include <set>

#include "common/byte_reader.h"
#include "common/error.h"

namespace pot::game {

using witness::Mode;
using witness::Verdict;

namespace {

constexpr std::string_view kTag = "pot/v2/outcome";
constexpr size_t kFixedBytes = 1 + kTag.size() + 8 + 4 + 32 + 8 + 3 + 3 * 8;  // before the four lists

void put_ids(Bytes &out, const std::vector<Bytes> &ids) {
  put_u32le(out, static_cast<uint32_t>(ids.size()));
  for (const Bytes &id : ids) {
    put_u32le(out, static_cast<uint32_t>(id.size()));
    put_bytes(out, id);
  }
}

// Whether `cause` is one the verdict can have.
bool cause_fits(Verdict v, Cause c) {
  switch (v) {
    case Verdict::kPass:
      return c == Cause::kAgreement;
    case Verdict::kFail:
      return c == Cause::kNoOpening || c == Cause::kBlame;
    case Verdict::kInconclusive:
      return c == Cause::kNoCommittee || c == Cause::kParticipation || c == Cause::kSplit ||
             c == Cause::kTaskProgram;
  }
  return false;
}


}  // namespace

const char *cause_name(Cause c) noexcept {
  switch (c) {
    case Cause::kAgreement: return "agreement";
    case Cause::kNoOpening: return "no_opening";
    case Cause::kBlame: return "blame";
    case Cause::kNoCommittee: return "no_committee";
    case Cause::kParticipation: return "participation";
    case Cause::kSplit: return "split";
    case Cause::kTaskProgram: return "task_program";
  }
  return "unknown";
}

Bytes Outcome::encode() const {
  Bytes out;
  out.reserve(kFixedBytes + 16);
  put_u8(out, static_cast<uint8_t>(kTag.size()));
  put_str(out, kTag);
  put_u64le(out, challenge_id);
  put_u32le(out, attempt);
  put_bytes(out, run_id.view());
  put_u64le(out, step);
  put_u8(out, static_cast<uint8_t>(mode));
  put_u8(out, static_cast<uint8_t>(verdict));
  put_u8(out, static_cast<uint8_t>(cause));
  put_u64le(out, cluster_size);
  put_u64le(out, cluster_stake);
  put_u64le(out, committee_stake);
  put_ids(out, minority);
  put_ids(out, silent);
  put_ids(out, misconfigured);
  put_ids(out, unreplayed);
  return out;
}

Outcome Outcome::decode(ByteView b) {
  if (b.size() > kMaxOutcomeBytes)
    fail(Status::kLimit, "outcome record of {} bytes, the limit is {}", b.size(), kMaxOutcomeBytes);
  ByteReader r(b, "outcome record");
  const uint8_t tag_len = r.u8("the tag length");
  const ByteView tag = r.take(tag_len, "the tag");
  const std::string_view tag_text(reinterpret_cast<const char *>(tag.data()), tag.size());
  if (tag_text != kTag) {
    if (tag_text.starts_with("pot/v") && tag_text.ends_with("/outcome"))
      fail(Status::kMalformed, "outcome record of tag '{}': this SDK reads '{}' (protocol version 2)", tag_text,
           kTag);
    fail(Status::kMalformed, "outcome record does not start with the tag '{}'", kTag);
  }
  Outcome o;
  o.challenge_id = r.u64("challenge_id");
  o.attempt = r.u32("attempt");
  if (o.attempt == 0) fail(Status::kMalformed, "outcome record: attempt 0 (attempts start at 1)");
  o.run_id = hash::Digest::from_bytes(r.take(32, "run_id"));
  o.step = r.u64("step");
  const uint8_t mode = r.u8("mode");
  if (mode != 1 && mode != 2) fail(Status::kMalformed, "outcome record: mode {} is not 1 or 2", mode);
  o.mode = static_cast<Mode>(mode);
  const uint8_t verdict = r.u8("verdict");
  if (verdict < 1 || verdict > 3) fail(Status::kMalformed, "outcome record: verdict {} is not 1..3", verdict);
  o.verdict = static_cast<Verdict>(verdict);
  const uint8_t cause = r.u8("cause");
  if (cause < 1 || cause > static_cast<uint8_t>(Cause::kTaskProgram) || !cause_fits(o.verdict, static_cast<Cause>(cause)))
    fail(Status::kMalformed, "outcome record: cause {} is not one of verdict {}", cause, verdict);
  o.cause = static_cast<Cause>(cause);
  o.cluster_size = r.u64("cluster_size");
  o.cluster_stake = r.u64("cluster_stake");
  o.committee_stake = r.u64("committee_stake");
  if (o.step == 0) fail(Status::kMalformed, "outcome record: step 0 (steps start at 1)");
  if (o.cluster_stake > o.committee_stake)
    fail(Status::kMalformed, "outcome record: cluster_stake {} above committee_stake {}", o.cluster_stake,
         o.committee_stake);
  std::set<Bytes> seen;  // the lists are disjoint: each member has one role
  auto ids = [&](std::vector<Bytes> &out, const char *list) {
    const uint32_t n = r.u32(list);
    // Each entry takes at least 5 bytes, so a count the bytes cannot hold
    // is refused before anything is reserved.
    if (n > r.remaining() / 5 || seen.size() + n > kMaxCommitteeSize)
      fail(Status::kMalformed, "outcome record: {} lists {} members, more than the bytes or a committee hold", list,
           n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t len = r.u32(list);
      if (len == 0 || len > witness::kMaxIdentity)
        fail(Status::kMalformed, "outcome record: {} entry {} of {} bytes, expected 1..{}", list, i, len,
             witness::kMaxIdentity);
      const ByteView id = r.take(len, list);
      Bytes entry(id.begin(), id.end());
      if (!out.empty() && !(out.back() < entry))
        fail(Status::kMalformed, "outcome record: {} is not sorted bytewise without repeats", list);
      if (!seen.insert(entry).second)
        fail(Status::kMalformed, "outcome record: {} names {}, which another list names", list, to_hex(entry));
      out.push_back(std::move(entry));
    }
  };
  ids(o.minority, "minority");
  ids(o.silent, "silent");
  ids(o.misconfigured, "misconfigured");
  ids(o.unreplayed, "unreplayed");
  // Only a decided outcome has a deciding group, and so a minority: a PASS,
  // a FAIL, or a committee finding the task's program at fault.
  if (o.verdict == Verdict::kInconclusive && o.cause != Cause::kTaskProgram && !o.minority.empty())
    fail(Status::kMalformed, "outcome record: an inconclusive verdict has no minority unless its cause is "
                             "task_program");
  if (r.remaining() != 0)
    fail(Status::kMalformed, "outcome record: {} bytes after the last list", r.remaining());
  return o;
}

nlohmann::json identities_json(const std::vector<Bytes> &ids) {
  nlohmann::json out = nlohmann::json::array();
  for (const Bytes &b : ids) out.push_back(to_hex(b));
  return out;
}

nlohmann::json Outcome::to_json() const {
  const char *verdict_text = verdict == Verdict::kPass   ? "pass"
                             : verdict == Verdict::kFail ? "fail"
                                                         : "inconclusive";
  return {{"challenge_id", challenge_id},
          {"attempt", attempt},
          {"run_id", run_id.hex()},
          {"step", step},
          {"mode", witness::mode_name(mode)},
          {"verdict", verdict_text},
          {"cause", cause_name(cause)},
          {"cluster_size", cluster_size},
          {"cluster_stake", cluster_stake},
          {"committee_stake", committee_stake},
          {"minority", identities_json(minority)},
          {"silent", identities_json(silent)},
          {"misconfigured", identities_json(misconfigured)},
          {"unreplayed", identities_json(unreplayed)}};
}

}  // namespace pot::game
static_assert(pot::game::kMaxOutcomeBytes == 266350, "include/pot.h documents the limit");
