// Strict reading of hand-written JSON documents (specs, commitments, ledger
// calls): every key must be known, required keys present, and each value of
// the expected type and range. Errors are kInvalidArgument naming the path.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hash/sha256.h"

namespace pot::codec {

class JsonFields {
 public:
  // `where` names the object in messages ("spec", "spec.optimizer").
  JsonFields(const nlohmann::json &j, std::string where);

  // Fails when the object has a key outside `known`.
  void only(std::initializer_list<const char *> known) const;
  void only(const std::vector<const char *> &known) const;
  bool has(const char *key) const { return j_.contains(key); }

  const nlohmann::json &object(const char *key) const;
  const nlohmann::json &value(const char *key) const { return at(key); }  // any type
  std::string str(const char *key) const;
  uint64_t u64(const char *key) const;
  uint32_t u32(const char *key) const;
  int64_t i64(const char *key) const;
  double f64(const char *key) const;
  bool boolean(const char *key) const;
  hash::Digest digest(const char *key) const;  // 64 hex characters
  Bytes hex(const char *key) const;

  std::string path(const char *key) const { return where_ + "." + key; }

 private:
  const nlohmann::json &at(const char *key) const;
  const nlohmann::json &j_;
  std::string where_;
};

}  // namespace pot::codec
