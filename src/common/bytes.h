// Small byte helpers: little-endian integer encoding, hex, UTF-8 checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pot {

using ByteView = std::span<const uint8_t>;
using Bytes = std::vector<uint8_t>;

inline void put_u8(Bytes &out, uint8_t v) { out.push_back(v); }
inline void put_u32le(Bytes &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_u64le(Bytes &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_bytes(Bytes &out, ByteView b) { out.insert(out.end(), b.begin(), b.end()); }
inline void put_str(Bytes &out, std::string_view s) {
  out.insert(out.end(), s.begin(), s.end());
}
inline uint64_t get_u64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t get_u32le(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Lower-case hex of the bytes.
std::string to_hex(ByteView b);
// Parses hex (either case, even length, no prefix or spaces); throws
// pot::Error(kMalformed) naming the first bad character.
Bytes from_hex(std::string_view hex);
// True when s is well-formed UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view s) noexcept;
// The length (1..4) of the well-formed UTF-8 sequence starting at s[i]; 0
// when the bytes there are not one (or i is past the end).
size_t utf8_sequence_length(std::string_view s, size_t i) noexcept;

}  // namespace pot
