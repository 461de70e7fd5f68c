#include "hash/finite.h"

#include <cstring>

#include <fmt/format.h>

#include "hash/safetensors.h"

namespace pot::hash {

namespace {

template <typename U>
std::optional<size_t> scan(ByteView b, U exponent_mask) {
  const size_t n = b.size() / sizeof(U);
  for (size_t i = 0; i < n; ++i) {
    U v;
    std::memcpy(&v, b.data() + i * sizeof(U), sizeof(U));  // little-endian hosts only (as the digests)
    if ((v & exponent_mask) == exponent_mask) return i;
  }
  return std::nullopt;
}

// NaN when the fraction is non-zero, else an infinity of the sign bit.
std::string describe(DType d, ByteView b, size_t i) {
  uint64_t v = 0;
  const size_t w = dtype_size(d);
  std::memcpy(&v, b.data() + i * w, w);
  uint64_t fraction = 0, sign = 0;
  switch (d) {
    case DType::kF16: fraction = v & 0x3FF; sign = v >> 15; break;
    case DType::kBF16: fraction = v & 0x7F; sign = v >> 15; break;
    case DType::kF32: fraction = v & 0x7FFFFF; sign = v >> 31; break;
    default: fraction = v & 0xFFFFFFFFFFFFFull; sign = v >> 63; break;
  }
  if (fraction != 0) return "NaN";
  return sign ? "-infinity" : "+infinity";
}

std::optional<std::string> first_in(const std::string &name, DType d, ByteView b) {
  const auto i = first_nonfinite(d, b);
  if (!i) return std::nullopt;
  return fmt::format("tensor '{}' element {} is {}", name, *i, describe(d, b, *i));
}

}  // namespace

std::optional<size_t> first_nonfinite(DType d, ByteView bytes) noexcept {
  switch (d) {
    case DType::kF16: return scan<uint16_t>(bytes, 0x7C00);
    case DType::kBF16: return scan<uint16_t>(bytes, 0x7F80);
    case DType::kF32: return scan<uint32_t>(bytes, 0x7F800000u);
    case DType::kF64: return scan<uint64_t>(bytes, 0x7FF0000000000000ull);
    default: return std::nullopt;
  }
}

std::optional<std::string> nonfinite_tensor(const SafetensorsFile &file) {
  for (size_t i = 0; i < file.size(); ++i)
    if (auto s = first_in(file.entry(i).meta.name, file.entry(i).meta.dtype, file.data(i))) return s;
  return std::nullopt;
}

std::optional<std::string> nonfinite_tensor(const std::vector<StTensor> &tensors) {
  for (const StTensor &t : tensors)
    if (auto s = first_in(t.meta.name, t.meta.dtype, t.data)) return s;
  return std::nullopt;
}

}  // namespace pot::hash
