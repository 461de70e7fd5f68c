// SHA-256 through OpenSSL EVP, the Digest value type and the domain-separated
// ("tagged") digest every pot structure uses. docs/PROTOCOL.md section 2
// defines the framing byte for byte.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"

struct evp_md_ctx_st;

namespace pot::hash {

inline constexpr size_t kDigestSize = 32;

struct Digest {
  std::array<uint8_t, kDigestSize> bytes{};

  bool operator==(const Digest &) const = default;
  auto operator<=>(const Digest &) const = default;
  std::string hex() const { return to_hex(bytes); }
  ByteView view() const { return bytes; }
  // Throws pot::Error(kMalformed) unless hex is exactly 64 hex characters.
  static Digest from_hex(std::string_view hex);
  static Digest from_bytes(ByteView b);  // b.size() must be 32 (kMalformed)
};

// Incremental SHA-256. Not copyable; one object per thread.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;

  Sha256 &reset();
  Sha256 &update(const void *data, size_t len);
  Sha256 &update(ByteView b) { return update(b.data(), b.size()); }
  Sha256 &update_u8(uint8_t v) { return update(&v, 1); }
  Sha256 &update_u32le(uint32_t v);
  Sha256 &update_u64le(uint64_t v);
  Digest finish();  // also resets, so the object can be reused

 private:
  evp_md_ctx_st *ctx_;
};

// SHA-256 of one buffer, using a per-thread context.
Digest sha256(const void *data, size_t len);
inline Digest sha256(ByteView b) { return sha256(b.data(), b.size()); }

// Starts a tagged digest: SHA-256(u8 len(tag) || tag || ...). Tags are ASCII,
// 2..255 bytes, so the first byte never equals the RFC 6962 leaf (0x00) or
// node (0x01) prefix.
void begin_tagged(Sha256 &h, std::string_view tag);

// The tags in use (docs/PROTOCOL.md, "Domain tags").
inline constexpr std::string_view kTagTensor = "pot/v1/tensor";
inline constexpr std::string_view kTagState = "pot/v1/state";

}  // namespace pot::hash
