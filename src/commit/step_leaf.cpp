#include "commit/step_leaf.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string_view>

#include "common/error.h"
#include "hash/rfc6962.h"

namespace pot::commit {

namespace {
constexpr std::string_view kTag = "pot/v3/step";
constexpr std::string_view kTagV2 = "pot/v2/step";
constexpr size_t kSizeV2 = 100;
constexpr std::string_view kTagV1 = "pot/v1/step";
constexpr size_t kSizeV1 = 60;

bool starts_with_tag(ByteView b, std::string_view tag) {
  return b.size() > tag.size() && b[0] == tag.size() && std::equal(tag.begin(), tag.end(), b.begin() + 1);
}
}  // namespace

Bytes StepLeaf::encode() const {
  if (step == 0) fail(Status::kInvalidArgument, "steps are numbered from 1; step 0 is the initial state");
  if (std::signbit(update_norm))
    fail(Status::kInvalidArgument, "an update norm is a square root: {} has its sign bit set", update_norm);
  Bytes out;
  out.reserve(kSize);
  put_u8(out, static_cast<uint8_t>(kTag.size()));
  put_str(out, kTag);
  put_bytes(out, run_id.view());
  put_u64le(out, step);
  put_bytes(out, state_digest.view());
  put_bytes(out, stats_digest.view());
  put_u64le(out, std::bit_cast<uint64_t>(loss));
  put_u64le(out, std::bit_cast<uint64_t>(update_norm));
  return out;
}

StepLeaf StepLeaf::decode(ByteView b) {
  if (b.size() == kSizeV1 && starts_with_tag(b, kTagV1))
    fail(Status::kMalformed,
         "step leaf of protocol version 1 ('{}', {} bytes): version 2 leaves name the run and commit the update "
         "norm ('{}', {} bytes)",
         kTagV1, kSizeV1, kTag, kSize);
  if (b.size() == kSizeV2 && starts_with_tag(b, kTagV2))
    fail(Status::kMalformed,
         "step leaf of version 2 ('{}', {} bytes, pot 0.2): version 3 leaves also commit the digest of the "
         "state's statistics table ('{}', {} bytes)",
         kTagV2, kSizeV2, kTag, kSize);
  if (b.size() != kSize) fail(Status::kMalformed, "step leaf is {} bytes, not {}", b.size(), kSize);
  if (!starts_with_tag(b, kTag)) fail(Status::kMalformed, "step leaf does not start with the tag '{}'", kTag);
  StepLeaf l;
  l.run_id = hash::Digest::from_bytes(b.subspan(12, 32));
  l.step = get_u64le(&b[44]);
  if (l.step == 0) fail(Status::kMalformed, "step leaf names step 0");
  l.state_digest = hash::Digest::from_bytes(b.subspan(52, 32));
  l.stats_digest = hash::Digest::from_bytes(b.subspan(84, 32));
  l.loss = std::bit_cast<double>(get_u64le(&b[116]));
  l.update_norm = std::bit_cast<double>(get_u64le(&b[124]));
  if (std::signbit(l.update_norm)) fail(Status::kMalformed, "step leaf commits to the update norm {}: its sign bit is set", l.update_norm);
  return l;
}

hash::Digest StepLeaf::leaf_hash() const { return hash::leaf_hash(encode()); }

}  // namespace pot::commit
