#include "commit/step_leaf.h"

#include <algorithm>
#include <bit>
#include <string_view>

#include "common/error.h"
#include "hash/rfc6962.h"

namespace pot::commit {

namespace {
constexpr std::string_view kTag = "pot/v1/step";
}

Bytes StepLeaf::encode() const {
  if (step == 0) fail(Status::kInvalidArgument, "steps are numbered from 1; step 0 is the initial state");
  Bytes out;
  out.reserve(kSize);
  put_u8(out, static_cast<uint8_t>(kTag.size()));
  put_str(out, kTag);
  put_u64le(out, step);
  put_bytes(out, state_digest.view());
  put_u64le(out, std::bit_cast<uint64_t>(loss));
  return out;
}

StepLeaf StepLeaf::decode(ByteView b) {
  if (b.size() != kSize) fail(Status::kMalformed, "step leaf is {} bytes, not {}", b.size(), kSize);
  if (b[0] != kTag.size() || !std::equal(kTag.begin(), kTag.end(), b.begin() + 1))
    fail(Status::kMalformed, "step leaf does not start with the tag '{}'", kTag);
  StepLeaf l;
  l.step = get_u64le(&b[12]);
  if (l.step == 0) fail(Status::kMalformed, "step leaf names step 0");
  l.state_digest = hash::Digest::from_bytes(b.subspan(20, 32));
  l.loss = std::bit_cast<double>(get_u64le(&b[52]));
  return l;
}

hash::Digest StepLeaf::leaf_hash() const { return hash::leaf_hash(encode()); }

}  // namespace pot::commit
