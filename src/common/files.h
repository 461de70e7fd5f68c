// Whole-file reads with a bound (a file larger than the caller expects is
// refused, never allocated).
#pragma once

#include <string>

#include "common/bytes.h"

namespace pot {

// kIo when the file cannot be opened or read, kLimit above `limit` bytes.
Bytes read_all(const std::string &path, uint64_t limit);

}  // namespace pot
