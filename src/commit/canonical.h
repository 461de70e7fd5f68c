// Shared pieces of the canonical protobuf decoders (docs/PROTOCOL.md 14.1):
// bounded parsing, digest fields, and the re-encoding check that makes a
// decoder refuse anything but the canonical bytes.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "hash/sha256.h"

namespace pot::commit {

inline ByteView bytes_of(const std::string &s) {
  return ByteView(reinterpret_cast<const uint8_t *>(s.data()), s.size());
}

// A bytes field that must hold a digest (kMalformed naming `what`).
inline hash::Digest digest_field(const std::string &s, std::string_view what) {
  if (s.size() != hash::kDigestSize) fail(Status::kMalformed, "{} is {} bytes, not 32", what, s.size());
  return hash::Digest::from_bytes(bytes_of(s));
}

// Parses message P from at most `limit` bytes: kLimit first (parsing
// allocates in proportion to the input), kMalformed when it does not parse.
template <typename P>
P parse_bounded(ByteView b, size_t limit, std::string_view what) {
  if (b.size() > limit) fail(Status::kLimit, "{} of {} bytes, the limit is {}", what, b.size(), limit);
  P p;
  if (!p.ParseFromArray(b.data(), static_cast<int>(b.size())))
    fail(Status::kMalformed, "{} bytes are not a {} message", what, p.GetTypeName());
  return p;
}

// kMalformed unless re-encoding the decoded value gave the input back.
inline void require_canonical(const Bytes &reencoded, ByteView b, std::string_view what) {
  if (reencoded.size() != b.size() || !std::equal(reencoded.begin(), reencoded.end(), b.begin()))
    fail(Status::kMalformed, "{} bytes are not in canonical form (unknown fields, defaults written, or order)",
         what);
}

}  // namespace pot::commit
