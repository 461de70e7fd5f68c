#include "common/bytes.h"

#include "common/error.h"

namespace pot {

std::string to_hex(ByteView b) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(b.size() * 2, '0');
  for (size_t i = 0; i < b.size(); ++i) {
    s[2 * i] = kDigits[b[i] >> 4];
    s[2 * i + 1] = kDigits[b[i] & 15];
  }
  return s;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Bytes from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0)
    fail(Status::kMalformed, "hex string has odd length {}", hex.size());
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); ++i) {
    int v = hex_value(hex[i]);
    if (v < 0)
      fail(Status::kMalformed, "invalid hex character at offset {}", i);
    out[i / 2] = static_cast<uint8_t>(out[i / 2] << 4 | v);
  }
  return out;
}

size_t utf8_sequence_length(std::string_view s, size_t i) noexcept {
  if (i >= s.size()) return 0;
  const auto c = static_cast<uint8_t>(s[i]);
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<uint8_t>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

bool is_valid_utf8(std::string_view s) noexcept {
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

}  // namespace pot
