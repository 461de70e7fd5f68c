// Helpers shared by the ledger's translation units (the rules in
// ledger.cpp, ledger_disputes.cpp and ledger_operators.cpp, the saved state
// in ledger_state.cpp); internal, not installed.
#pragma once

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "codec/canonical.h"
#include "common/bytes.h"
#include "common/error.h"
#include "hash/sha256.h"
#include "witness/statement.h"

namespace pot::game::ledger_util {

using hash::Digest;
using witness::kMaxIdentity;

inline bool same(ByteView a, ByteView b) { return std::ranges::equal(a, b); }
inline Bytes to_bytes(ByteView b) { return Bytes(b.begin(), b.end()); }
inline std::string as_string(ByteView b) {
  return std::string(reinterpret_cast<const char *>(b.data()), b.size());
}
inline ByteView view_of(const std::string &s) {
  return ByteView(reinterpret_cast<const uint8_t *>(s.data()), s.size());
}

// Every caller is an identity: 1..256 bytes, as witness commitments require.
// Checking it first also bounds the copies made for map lookups.
inline void check_caller(ByteView caller, const char *call) {
  if (caller.empty() || caller.size() > kMaxIdentity)
    fail(Status::kInvalidArgument, "{}: caller identity of {} bytes, expected 1..{}", call,
         caller.size(), kMaxIdentity);
}

// ---- loading helpers: every violation is kMalformed ----

[[noreturn]] inline void bad_state(const std::string &what) {
  throw Error(Status::kMalformed, "ledger state: " + what);
}

inline Digest digest_field(const std::string &s, const std::string &what) {
  return codec::digest_field(s, "ledger state: " + what);
}

// Runs a check from another layer and reports its failure as a malformed
// state, keeping its message: whatever the cause, the bytes are not a state
// this ledger could have reached.
template <typename F>
inline auto as_state_check(const std::string &what, F &&f) {
  try {
    return f();
  } catch (const Error &e) {
    bad_state(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace pot::game::ledger_util
