#include "codec/json_fields.h"

#include <algorithm>

#include "common/error.h"

namespace pot::codec {

JsonFields::JsonFields(const nlohmann::json &j, std::string where) : j_(j), where_(std::move(where)) {
  if (!j_.is_object()) fail(Status::kInvalidArgument, "{} must be a JSON object", where_);
}

void JsonFields::only(std::initializer_list<const char *> known) const {
  only(std::vector<const char *>(known));
}

void JsonFields::only(const std::vector<const char *> &known) const {
  for (const auto &item : j_.items()) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string &k = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char *n) { return k == n; }))
      fail(Status::kInvalidArgument, "{}: unknown key '{}'", where_, k);
  }
}

const nlohmann::json &JsonFields::at(const char *key) const {
  auto it = j_.find(key);
  if (it == j_.end()) fail(Status::kInvalidArgument, "{}: missing key '{}'", where_, key);
  return *it;
}

const nlohmann::json &JsonFields::object(const char *key) const {
  const nlohmann::json &v = at(key);
  if (!v.is_object()) fail(Status::kInvalidArgument, "{} must be an object", path(key));
  return v;
}

std::string JsonFields::str(const char *key) const {
  const nlohmann::json &v = at(key);
  if (!v.is_string()) fail(Status::kInvalidArgument, "{} must be a string", path(key));
  return v.get<std::string>();
}

uint64_t JsonFields::u64(const char *key) const {
  const nlohmann::json &v = at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail(Status::kInvalidArgument, "{} must be a non-negative integer", path(key));
  return v.get<uint64_t>();
}

int64_t JsonFields::i64(const char *key) const {
  const nlohmann::json &v = at(key);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) fail(Status::kInvalidArgument, "{} = {} does not fit int64", path(key), u);
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  fail(Status::kInvalidArgument, "{} must be an integer", path(key));
}

uint32_t JsonFields::u32(const char *key) const {
  const uint64_t v = u64(key);
  if (v > UINT32_MAX) fail(Status::kInvalidArgument, "{} = {} does not fit 32 bits", path(key), v);
  return static_cast<uint32_t>(v);
}

double JsonFields::f64(const char *key) const {
  const nlohmann::json &v = at(key);
  if (!v.is_number()) fail(Status::kInvalidArgument, "{} must be a number", path(key));
  return v.get<double>();
}

bool JsonFields::boolean(const char *key) const {
  const nlohmann::json &v = at(key);
  if (!v.is_boolean()) fail(Status::kInvalidArgument, "{} must be true or false", path(key));
  return v.get<bool>();
}

hash::Digest JsonFields::digest(const char *key) const {
  try {
    return hash::Digest::from_hex(str(key));
  } catch (const Error &e) {
    fail(Status::kInvalidArgument, "{}: {}", path(key), e.what());
  }
}

Bytes JsonFields::hex(const char *key) const {
  try {
    return from_hex(str(key));
  } catch (const Error &e) {
    fail(Status::kInvalidArgument, "{}: {}", path(key), e.what());
  }
}

}  // namespace pot::codec
