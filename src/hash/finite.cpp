#include "hash/finite.h"

#include <cstring>

#include <fmt/format.h>

#include "hash/safetensors.h"
#include "hash/update_norm.h"

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

namespace {

template <typename U>
size_t count_zero_exponent(ByteView b, U exponent_mask) {
  const size_t n = b.size() / sizeof(U);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    U v;
    std::memcpy(&v, b.data() + i * sizeof(U), sizeof(U));
    // Exponent zero, fraction (everything but the sign) not: subnormal.
    const U magnitude = static_cast<U>(v & static_cast<U>(~(U{1} << (sizeof(U) * 8 - 1))));
    count += (v & exponent_mask) == 0 && magnitude != 0;
  }
  return count;
}

bool counted(DType d) { return d == DType::kBF16 || d == DType::kF32 || d == DType::kF64; }

void add(SubnormalCensus &c, std::string_view name, DType d, ByteView b) {
  if (!counted(d)) return;
  const bool param = name.starts_with(kLeafNormPrefix);
  const uint64_t n = b.size() / dtype_size(d), sub = count_subnormal(d, b);
  (param ? c.param_elements : c.other_elements) += n;
  (param ? c.param_subnormal : c.other_subnormal) += sub;
  std::string &first = param ? c.first_param : c.first_other;
  if (sub && first.empty()) first = name;
}

std::string over(uint64_t sub, uint64_t elements, uint64_t share, const std::string &first, const char *what) {
  return fmt::format("{} subnormal {} values of {} (tensor '{}' first); at most 1 in {} is allowed", sub, what,
                     elements, first, share);
}

}  // namespace

size_t count_subnormal(DType d, ByteView bytes) noexcept {
  switch (d) {
    case DType::kBF16: return count_zero_exponent<uint16_t>(bytes, 0x7F80);
    case DType::kF32: return count_zero_exponent<uint32_t>(bytes, 0x7F800000u);
    case DType::kF64: return count_zero_exponent<uint64_t>(bytes, 0x7FF0000000000000ull);
    default: return 0;
  }
}

SubnormalCensus subnormal_census(const SafetensorsFile &file) {
  SubnormalCensus c;
  for (size_t i = 0; i < file.size(); ++i) add(c, file.entry(i).meta.name, file.entry(i).meta.dtype, file.data(i));
  return c;
}

SubnormalCensus subnormal_census(const std::vector<StTensor> &tensors) {
  SubnormalCensus c;
  for (const StTensor &t : tensors) add(c, t.meta.name, t.meta.dtype, t.data);
  return c;
}

std::optional<std::string> subnormal_excess(const SubnormalCensus &c) {
  if (c.param_subnormal > c.param_elements / kParamSubnormalShare)
    return over(c.param_subnormal, c.param_elements, kParamSubnormalShare, c.first_param, "parameter");
  if (c.other_subnormal > c.other_elements / kOtherSubnormalShare)
    return over(c.other_subnormal, c.other_elements, kOtherSubnormalShare, c.first_other, "optimizer-state");
  return std::nullopt;
}

}  // namespace pot::hash
