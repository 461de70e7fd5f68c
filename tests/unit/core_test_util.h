// Helpers for tests of the C++ core (not the C API tests, which see only pot.h).
#pragma once

#include <functional>

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
