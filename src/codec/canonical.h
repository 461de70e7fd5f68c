// Shared pieces of the canonical protobuf decoders (docs/PROTOCOL.md 14.1):
// bounded parsing, digest fields, and the re-encoding check that makes a
// decoder refuse anything but the canonical bytes.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "common/error.h"
#include "hash/sha256.h"

namespace pot::codec {

inline ByteView bytes_of(const std::string &s) {
  return ByteView(reinterpret_cast<const uint8_t *>(s.data()), s.size());
}

// A bytes field that must hold a digest (kMalformed naming `what`).
inline hash::Digest digest_field(const std::string &s, std::string_view what) {
  if (s.size() != hash::kDigestSize) fail(Status::kMalformed, "{} is {} bytes, not 32", what, s.size());
  return hash::Digest::from_bytes(bytes_of(s));
}

// The smallest canonical size of the elements of a repeated message (or
// bytes) field, and the rules for fields inside those elements.
struct MinSize {
  uint32_t field;
  size_t min_bytes;
  std::initializer_list<MinSize> nested = {};
};

// Parsing a repeated field allocates an object per element, however small
// its encoding: a few bytes per element would cost a hundred times the input.
// Before parsing, walks the wire format (without allocating) and refuses
// (kMalformed) any element of a listed length-delimited field shorter than
// its canonical minimum, so the objects stay proportional to the input.
// Bytes that are not wire format end the walk quietly: the parser reports them.
inline bool check_min_sizes(ByteView b, std::initializer_list<MinSize> rules, std::string_view what) {
  if (rules.size() == 0) return true;
  size_t at = 0;
  auto varint = [&](uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64 && at < b.size(); shift += 7) {
      const uint8_t c = b[at++];
      v |= uint64_t{c & 0x7Fu} << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  };
  while (at < b.size()) {
    uint64_t key = 0, n = 0;
    if (!varint(key)) return false;
    switch (key & 7) {
      case 0:
        if (!varint(n)) return false;
        break;
      case 1:
      case 5: {
        const size_t w = (key & 7) == 1 ? 8 : 4;
        if (b.size() - at < w) return false;
        at += w;
        break;
      }
      case 2: {
        if (!varint(n) || n > b.size() - at) return false;
        for (const MinSize &r : rules) {
          if (r.field != key >> 3) continue;
          if (n < r.min_bytes)
            fail(Status::kMalformed, "{}: an element of field {} is {} bytes, a canonical one at least {}", what,
                 r.field, n, r.min_bytes);
          if (r.nested.size() != 0 && !check_min_sizes(b.subspan(at, n), r.nested, what)) return false;
        }
        at += n;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

// Parses message P from at most `limit` bytes: kLimit first, then the
// minimum sizes of repeated elements (check_min_sizes), so that parsing
// allocates in proportion to the input; kMalformed when it does not parse.
template <typename P>
P parse_bounded(ByteView b, size_t limit, std::string_view what, std::initializer_list<MinSize> min_sizes = {}) {
  if (b.size() > limit) fail(Status::kLimit, "{} of {} bytes, the limit is {}", what, b.size(), limit);
  check_min_sizes(b, min_sizes, what);
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

}  // namespace pot::codec
