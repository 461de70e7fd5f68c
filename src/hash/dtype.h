// Element types of tensors. The numeric codes are part of the tensor digest
// (docs/PROTOCOL.md) and equal the pot_dtype values of include/pot.h.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pot::hash {

enum class DType : uint8_t {
  kBool = 1,
  kU8 = 2,
  kI8 = 3,
  kI16 = 4,
  kU16 = 5,
  kI32 = 6,
  kU32 = 7,
  kI64 = 8,
  kU64 = 9,
  kF16 = 10,
  kBF16 = 11,
  kF32 = 12,
  kF64 = 13,
};

// Bytes per element; 0 for a code that is not a DType.
size_t dtype_size(DType d) noexcept;
bool dtype_valid(int code) noexcept;
// The safetensors spelling ("F32", "BF16", "BOOL", ...).
std::string_view dtype_name(DType d) noexcept;
std::optional<DType> dtype_from_name(std::string_view name) noexcept;

// The value of IEEE 754 binary16 bits (subnormals exact, NaN and the
// infinities as such): what the update norm and the statistics widen F16 to.
inline double half_to_double(uint16_t h) noexcept {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);                       // subnormal or zero
  else if (exp == 31) v = mant ? std::nan("") : INFINITY;        // NaN or infinity
  else v = std::ldexp(mant + 1024, exp - 25);                    // normal
  return sign ? -v : v;
}

}  // namespace pot::hash
