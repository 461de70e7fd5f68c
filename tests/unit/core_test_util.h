// Helpers for tests of the C++ core (not the C API tests, which see only pot.h).
#pragma once

#include <functional>

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
