// The exception firewall: every extern "C" body runs through guard(), which
// turns exceptions into a pot_status and, when requested, a pot_error.
// No exception crosses the C boundary.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/error.h"
#include "hash/sha256.h"
#include "hash/tensor.h"
#include "pot.h"

struct pot_error {
  pot_status code;
  std::string message;
};

namespace pot::capi {

// Stores an error in *err (when err is non-NULL) and returns its code.
pot_status set_error(pot_error **err, pot_status code, const char *message) noexcept;

template <typename F>
pot_status guard(pot_error **err, F &&body) noexcept {
  try {
    body();
    return POT_OK;
  } catch (const Error &e) {
    return set_error(err, static_cast<pot_status>(e.status()), e.what());
  } catch (const std::bad_alloc &) {
    return set_error(err, POT_E_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return set_error(err, POT_E_INTERNAL, e.what());
  } catch (...) {
    return set_error(err, POT_E_INTERNAL, "unknown exception");
  }
}

// Throws kInvalidArgument naming the parameter when p is NULL.
template <typename T>
T *need(T *p, const char *param) {
  if (!p) fail(Status::kInvalidArgument, "argument '{}' must not be NULL", param);
  return p;
}

// A result struct's struct_size (pot.h "Result structs"): the caller's
// struct must hold at least this header's fields. Names the struct and the
// initialiser to use.
template <typename T>
T *result_arg(T *out, const char *param, const char *type, const char *init) {
  need(out, param);
  if (out->struct_size < sizeof(T))
    fail(Status::kInvalidArgument, "{}->struct_size is {}, {} needs at least {}: initialise it with {}", param,
         out->struct_size, type, sizeof(T), init);
  return out;
}
// Writes a result into the caller's struct (checked by result_arg): this
// header's fields, keeping the caller's struct_size; any later fields the
// caller's larger struct has are left as they are.
template <typename T>
void write_result(T *out, T value) {
  value.struct_size = out->struct_size;
  std::memcpy(static_cast<void *>(out), &value, sizeof(T));
}

// A byte view of (data, len); data may be NULL only when len is 0.
ByteView bytes_arg(const void *data, size_t len, const char *param);
// A list of byte strings (data[i], lens[i]) for i < n; the arrays may be
// NULL only when n is 0. Copied.
std::vector<Bytes> byte_list_arg(const uint8_t *const *data, const size_t *lens, size_t n, const char *param);
// A list of n u64 values; NULL only when n is 0. Copied.
std::vector<uint64_t> u64_list_arg(const uint64_t *data, size_t n, const char *param);
// A NUL-terminated string argument.
std::string_view str_arg(const char *s, const char *param);

inline hash::Digest to_digest(const pot_digest *d, const char *param) {
  hash::Digest out;
  std::memcpy(out.bytes.data(), need(d, param)->bytes, POT_DIGEST_SIZE);
  return out;
}
inline void from_digest(pot_digest *out, const hash::Digest &d) {
  std::memcpy(out->bytes, d.bytes.data(), POT_DIGEST_SIZE);
}
// The integer a C caller passed as an enum. Copied as bytes, so a value
// outside the enumerators (or negative) is never loaded as the C++ enum.
template <typename E>
int enum_arg(const E &e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Tensor name, dtype and shape arguments, checked (kInvalidArgument, kLimit).
hash::TensorMeta tensor_meta(const char *name, pot_dtype dtype, const uint64_t *shape, size_t ndim);

// Parses a NUL-terminated JSON argument (kMalformed when it is not JSON).
nlohmann::json parse_json_arg(const char *text, const char *param);
// Copies a string into a pot_bytes whose data is also NUL-terminated.
void to_text(pot_bytes *out, const std::string &s);

// Copies b into a pot_bytes allocated with malloc (freed by pot_bytes_free).
void to_bytes(pot_bytes *out, const Bytes &b);

}  // namespace pot::capi
