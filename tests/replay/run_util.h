// Shared by the test programs that drive the C API over run directories of
// tests/replay/train.py (pot_check_run, pot_record_run).
#pragma once

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "pot.h"

namespace pot_test {

// A failed C API call: its status and message.
struct Failure {
  pot_status status;
  std::string message;
};

// Throws Failure for a status other than POT_OK, freeing (and clearing) err.
inline void check(pot_status s, pot_error *&err) {
  if (s == POT_OK) return;
  Failure f{s, err ? pot_error_message(err) : ""};
  pot_error_free(err);
  err = nullptr;
  throw f;
}

inline std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure{POT_E_IO, "cannot read " + path};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// DIR/%06d.safetensors: a state or a sample of a run directory.
inline std::string numbered(const std::string &dir, uint64_t t) {
  char name[48];
  std::snprintf(name, sizeof name, "/%06" PRIu64 ".safetensors", t);
  return dir + name;
}

inline std::string hex(const pot_digest &d) {
  char buf[2 * POT_DIGEST_SIZE + 1];
  pot_digest_to_hex(buf, &d, nullptr);
  return buf;
}

inline pot_digest digest_of(const std::string &hex_text) {
  pot_digest d;
  pot_error *err = nullptr;
  check(pot_digest_from_hex(&d, hex_text.c_str(), &err), err);
  return d;
}

}  // namespace pot_test
