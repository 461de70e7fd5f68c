#include "game/dispute_record.h"

#include <algorithm>

#include "common/byte_reader.h"
#include "common/error.h"

namespace pot::game {

using hash::Digest;

const char *dispute_end_name(DisputeEnd e) noexcept {
  switch (e) {
    case DisputeEnd::kStepFound: return "step_found";
    case DisputeEnd::kMinerDefault: return "miner_default";
    case DisputeEnd::kChallengerDefault: return "challenger_default";
    case DisputeEnd::kBothDefault: return "both_default";
  }
  return "unknown";
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
  put_u32le(out, rounds);
  put_u64le(out, step);
  put_bytes(out, agreed.view());
  put_bytes(out, miner_digest.view());
  put_bytes(out, challenger_digest.view());
  return out;
}

DisputeRecord DisputeRecord::decode(ByteView b) {
  constexpr const char *kWhat = "dispute record";
  if (b.size() > kMaxDisputeRecordBytes)
    fail(Status::kLimit, "{} of {} bytes, the limit is {}", kWhat, b.size(), kMaxDisputeRecordBytes);
  ByteReader r(b, kWhat);
  const uint8_t tag_len = r.u8("the tag length");
  const ByteView tag = r.take(tag_len, "the tag");
  const std::string_view tag_text(reinterpret_cast<const char *>(tag.data()), tag.size());
  if (tag_text != kDisputeRecordTag) {
    if (tag_text.starts_with("pot/v") && tag_text.ends_with("/dispute-outcome"))
      fail(Status::kMalformed, "{} of tag '{}': this SDK reads '{}' (protocol version 2)", kWhat, tag_text,
           kDisputeRecordTag);
    fail(Status::kMalformed, "{} does not start with the tag '{}'", kWhat, kDisputeRecordTag);
  }
  DisputeRecord d;
  d.dispute_id = r.u64("dispute_id");
  d.run_id = Digest::from_bytes(r.take(32, "run_id"));
  auto identity = [&](const char *what) {
    const uint32_t len = r.u32(what);
    if (len == 0 || len > witness::kMaxIdentity)
      fail(Status::kMalformed, "{}: {} of {} bytes, expected 1..{}", kWhat, what, len, witness::kMaxIdentity);
    const ByteView v = r.take(len, what);
    return Bytes(v.begin(), v.end());
  };
  d.miner = identity("miner");
  d.challenger = identity("challenger");
  if (d.miner == d.challenger) fail(Status::kMalformed, "{}: the miner is its own challenger", kWhat);
  d.lo = r.u64("lo");
  d.hi = r.u64("hi");
  if (d.lo >= d.hi) fail(Status::kMalformed, "{}: lo {} is not below hi {}", kWhat, d.lo, d.hi);
  const uint8_t end = r.u8("end");
  if (end < 1 || end > 4) fail(Status::kMalformed, "{}: end {} is not 1..4", kWhat, end);
  d.end = static_cast<DisputeEnd>(end);
  d.rounds = r.u32("rounds");
  d.step = r.u64("step");
  d.agreed = Digest::from_bytes(r.take(32, "agreed"));
  d.miner_digest = Digest::from_bytes(r.take(32, "miner_digest"));
  d.challenger_digest = Digest::from_bytes(r.take(32, "challenger_digest"));
  if (r.remaining() != 0) fail(Status::kMalformed, "{}: {} bytes after challenger_digest", kWhat, r.remaining());
  if (d.end == DisputeEnd::kStepFound) {
    if (d.step <= d.lo || d.step > d.hi)
      fail(Status::kMalformed, "{}: step {} is outside the disputed interval ({}, {}]", kWhat, d.step, d.lo, d.hi);
    if (d.miner_digest == d.challenger_digest)
      fail(Status::kMalformed, "{}: the parties' digests of step {} are equal: nothing is disputed", kWhat, d.step);
  } else if (d.step != 0 || d.agreed != Digest{} || d.miner_digest != Digest{} || d.challenger_digest != Digest{}) {
    fail(Status::kMalformed, "{}: a dispute ended by default has step 0 and all-zero digests", kWhat);
  }
  return d;
}

std::vector<std::string> DisputeRecord::losers() const {
  switch (end) {
    case DisputeEnd::kStepFound: return {};
    case DisputeEnd::kMinerDefault: return {"miner"};
    case DisputeEnd::kChallengerDefault: return {"challenger"};
    case DisputeEnd::kBothDefault: return {"miner", "challenger"};
  }
  return {};
}

nlohmann::json DisputeRecord::to_json() const {
  const bool found = end == DisputeEnd::kStepFound;
  auto digest = [&](const Digest &d) { return found ? nlohmann::json(d.hex()) : nlohmann::json(nullptr); };
  return {{"dispute_id", dispute_id},
          {"run_id", run_id.hex()},
          {"miner", to_hex(miner)},
          {"challenger", to_hex(challenger)},
          {"lo", lo},
          {"hi", hi},
          {"end", dispute_end_name(end)},
          {"rounds", rounds},
          {"step", step},
          {"agreed", digest(agreed)},
          {"miner_digest", digest(miner_digest)},
          {"challenger_digest", digest(challenger_digest)},
          {"losers", losers()}};
}

}  // namespace pot::game
static_assert(pot::game::kMaxDisputeRecordBytes == 708, "include/pot.h documents the limit");
