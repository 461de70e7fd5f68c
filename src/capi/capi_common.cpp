// Library-wide C entry points: versions, constants, errors, byte buffers.
#include "capi/version.h"
#include "capi/firewall.h"
#include "spec/state_names.h"
#include "hash/tensor.h"
#include "commit/commitment.h"

static_assert(POT_VERSION_MAJOR == POT_BUILD_VERSION_MAJOR &&
                  POT_VERSION_MINOR == POT_BUILD_VERSION_MINOR &&
                  POT_VERSION_PATCH == POT_BUILD_VERSION_PATCH,
              "pot.h version macros differ from the CMake project version");
static_assert(POT_PROTOCOL_VERSION == pot::commit::kProtocolVersion, "pot.h POT_PROTOCOL_VERSION differs from the core's");
static_assert(POT_ABI_VERSION == POT_BUILD_ABI_VERSION,
              "pot.h POT_ABI_VERSION differs from CMake's POT_ABI_VERSION");
static_assert(POT_DIGEST_SIZE == pot::hash::kDigestSize);
static_assert(POT_CHUNK_SIZE == pot::hash::kChunkSize);
static_assert(POT_MAX_NAME_BYTES == pot::hash::kMaxNameBytes);
static_assert(POT_MAX_DIMS == pot::hash::kMaxDims);

namespace pot::capi {

namespace {
// Handed out when the error itself cannot be allocated; never freed.
pot_error g_out_of_memory{POT_E_OUT_OF_MEMORY, "out of memory"};
}  // namespace

pot_status set_error(pot_error **err, pot_status code, const char *message) noexcept {
  if (err) {
    try {
      *err = new pot_error{code, printable_message(message ? message : "")};
    } catch (...) {
      *err = &g_out_of_memory;
    }
  }
  return code;
}

ByteView bytes_arg(const void *data, size_t len, const char *param) {
  if (!data && len) fail(Status::kInvalidArgument, "argument '{}' is NULL with length {}", param, len);
  return ByteView(static_cast<const uint8_t *>(data), len);
}

std::string_view str_arg(const char *s, const char *param) { return need(s, param); }

std::vector<Bytes> byte_list_arg(const uint8_t *const *data, const size_t *lens, size_t n, const char *param) {
  if (n && (!data || !lens)) fail(Status::kInvalidArgument, "argument '{}' is NULL with {} elements", param, n);
  std::vector<Bytes> out;
  out.reserve(std::min<size_t>(n, 1u << 20));
  for (size_t i = 0; i < n; ++i) {
    const ByteView v = bytes_arg(data[i], lens[i], param);
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

std::vector<uint64_t> u64_list_arg(const uint64_t *data, size_t n, const char *param) {
  if (n && !data) fail(Status::kInvalidArgument, "argument '{}' is NULL with {} elements", param, n);
  return n ? std::vector<uint64_t>(data, data + n) : std::vector<uint64_t>{};
}

void to_bytes(pot_bytes *out, const Bytes &b) {
  auto *p = static_cast<uint8_t *>(std::malloc(b.empty() ? 1 : b.size()));
  if (!p) throw std::bad_alloc();
  if (!b.empty()) std::memcpy(p, b.data(), b.size());
  out->data = p;
  out->len = b.size();
}

}  // namespace pot::capi

using namespace pot;
using namespace pot::capi;

extern "C" {

const char *pot_version_string(void) { return POT_BUILD_VERSION_STRING; }
uint32_t pot_abi_version(void) { return POT_BUILD_ABI_VERSION; }
uint32_t pot_protocol_version(void) { return POT_PROTOCOL_VERSION; }
size_t pot_digest_size(void) { return POT_DIGEST_SIZE; }
uint32_t pot_chunk_size(void) { return POT_CHUNK_SIZE; }
size_t pot_max_name_bytes(void) { return POT_MAX_NAME_BYTES; }
size_t pot_max_dims(void) { return POT_MAX_DIMS; }

const char *pot_status_name(pot_status status) {
  return pot::status_name(static_cast<pot::Status>(enum_arg(status)));
}

static_assert(pot::kStatusCount == POT_E_NONFINITE + 1, "common/status.h and pot.h list the same statuses");
uint32_t pot_status_count(void) { return static_cast<uint32_t>(pot::kStatusCount); }

const char *pot_state_part_name(pot_state_part part) {
  switch (enum_arg(part)) {
    case POT_STATE_PARAM_PREFIX: return spec::kParamPrefix.data();
    case POT_STATE_BUFFER_PREFIX: return spec::kBufferPrefix.data();
    case POT_STATE_OPTIM_PREFIX: return spec::kOptimPrefix.data();
    case POT_STATE_LR: return spec::kLrName.data();
    case POT_STATE_RNG: return spec::kRngName.data();
    case POT_STATE_GRAD_PREFIX: return spec::kGradPrefix.data();
    default: return nullptr;
  }
}

pot_status pot_error_code(const pot_error *error) {
  return error ? error->code : POT_E_INVALID_ARGUMENT;
}

const char *pot_error_message(const pot_error *error) {
  return error ? error->message.c_str() : "no error object";
}

void pot_error_free(pot_error *error) {
  if (error != &g_out_of_memory) delete error;
}

void pot_bytes_free(pot_bytes *b) {
  if (!b) return;
  std::free(b->data);
  b->data = nullptr;
  b->len = 0;
}

pot_status pot_digest_to_hex(char out[2 * POT_DIGEST_SIZE + 1], const pot_digest *d,
                             pot_error **err) {
  return guard(err, [&] {
    const std::string hex = to_digest(d, "d").hex();
    std::memcpy(need(out, "out"), hex.c_str(), hex.size() + 1);
  });
}

pot_status pot_digest_from_hex(pot_digest *out, const char *hex, pot_error **err) {
  return guard(err, [&] {
    const hash::Digest d = hash::Digest::from_hex(str_arg(hex, "hex"));
    from_digest(need(out, "out"), d);
  });
}

pot_status pot_sha256(pot_digest *out, const void *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    const hash::Digest d = hash::sha256(bytes_arg(data, data_len, "data"));
    from_digest(need(out, "out"), d);
  });
}

}  // extern "C"
