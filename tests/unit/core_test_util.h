// Helpers for tests of the C++ core (not the C API tests, which see only pot.h).
#pragma once

#include <cstring>
#include <functional>
#include <vector>

#include "common/bytes.h"
#include "common/error.h"

namespace pot::test {

// The status a call throws with, or kOk when it returns.
inline Status status_of(const std::function<void()> &f) {
  try {
    f();
    return Status::kOk;
  } catch (const Error &e) {
    return e.status();
  }
}

// The little-endian bytes of F32 values (the hosts pot runs on).
inline Bytes f32_bytes(const std::vector<float> &v) {
  Bytes b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// What ledger tests deposit for each party before it bonds (docs/ledger.md
// 2.18): far more than any test's bonds.
inline constexpr uint64_t kFunds = 1'000'000;

}  // namespace pot::test

// A refused ledger call must throw the given status and leave the
// serialized state byte for byte as it was (docs/ledger.md: no call writes
// anything before its last check has passed).
#define EXPECT_REFUSED(ledger, status, ...)                                    \
  do {                                                                         \
    const ::pot::Bytes before_ = (ledger).save();                              \
    EXPECT_EQ(::pot::test::status_of([&] { __VA_ARGS__; }), (status));         \
    EXPECT_EQ((ledger).save(), before_) << "a refused call changed the state"; \
  } while (0)
