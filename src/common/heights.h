// Block heights and the deadlines counted from them: a deadline that would
// pass 2^64 - 1 is the last height there is, never a wrapped one.
#pragma once

#include <cstdint>

namespace pot {

// height + blocks, saturating at 2^64 - 1.
constexpr uint64_t saturating_add(uint64_t height, uint64_t blocks) noexcept {
  return height > UINT64_MAX - blocks ? UINT64_MAX : height + blocks;
}

}  // namespace pot
