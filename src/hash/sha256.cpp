#include "hash/sha256.h"

#include <openssl/evp.h>

#include <new>

#include "common/error.h"

namespace pot::hash {

namespace {

// SHA-256 implementation fetched once per process (OpenSSL 3 provider).
const EVP_MD *sha256_md() {
  static const EVP_MD *md = [] {
    const EVP_MD *m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (!m) m = EVP_sha256();
    return m;
  }();
  return md;
}

void check(int ok, const char *what) {
  if (ok != 1) fail(Status::kBackend, "OpenSSL {} failed", what);
}

}  // namespace

Digest Digest::from_hex(std::string_view hex) {
  if (hex.size() != 2 * kDigestSize)
    fail(Status::kMalformed, "digest must be {} hex characters, got {}", 2 * kDigestSize,
         hex.size());
  return from_bytes(pot::from_hex(hex));
}

Digest Digest::from_bytes(ByteView b) {
  if (b.size() != kDigestSize)
    fail(Status::kMalformed, "digest must be {} bytes, got {}", kDigestSize, b.size());
  Digest d;
  std::copy(b.begin(), b.end(), d.bytes.begin());
  return d;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256 &Sha256::reset() {
  check(EVP_DigestInit_ex(ctx_, sha256_md(), nullptr), "EVP_DigestInit_ex");
  return *this;
}

Sha256 &Sha256::update(const void *data, size_t len) {
  if (len) check(EVP_DigestUpdate(ctx_, data, len), "EVP_DigestUpdate");
  return *this;
}

Sha256 &Sha256::update_u32le(uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return update(b, 4);
}

Sha256 &Sha256::update_u64le(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return update(b, 8);
}

Digest Sha256::finish() {
  Digest d;
  unsigned int len = 0;
  check(EVP_DigestFinal_ex(ctx_, d.bytes.data(), &len), "EVP_DigestFinal_ex");
  reset();
  return d;
}

Digest sha256(const void *data, size_t len) {
  thread_local Sha256 h;
  return h.update(data, len).finish();
}

void begin_tagged(Sha256 &h, std::string_view tag) {
  if (tag.size() < 2 || tag.size() > 255)
    fail(Status::kInternal, "domain tag length {} outside 2..255", tag.size());
  h.update_u8(static_cast<uint8_t>(tag.size())).update(tag.data(), tag.size());
}

}  // namespace pot::hash
