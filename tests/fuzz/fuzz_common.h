// Shared by the libFuzzer targets (docs/security.md): every target feeds
// untrusted bytes to one decoder or verifier. A pot::Error is the expected
// outcome for bad input; any other exception, a crash, a sanitizer report,
// a leak or a timeout is a finding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"
#include "common/error.h"

#define POT_FUZZ_TARGET(...)                                                   \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {    \
    const pot::ByteView input(data, size);                                     \
    try {                                                                      \
      __VA_ARGS__                                                              \
    } catch (const pot::Error &) {                                             \
    }                                                                          \
    return 0;                                                                  \
  }
