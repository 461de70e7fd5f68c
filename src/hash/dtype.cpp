#include "hash/dtype.h"

namespace pot::hash {

namespace {
struct Entry {
  DType dtype;
  std::string_view name;
  size_t size;
};
constexpr Entry kTable[] = {
    {DType::kBool, "BOOL", 1}, {DType::kU8, "U8", 1},     {DType::kI8, "I8", 1},
    {DType::kI16, "I16", 2},   {DType::kU16, "U16", 2},   {DType::kI32, "I32", 4},
    {DType::kU32, "U32", 4},   {DType::kI64, "I64", 8},   {DType::kU64, "U64", 8},
    {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2}, {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},
};
const Entry *find(DType d) {
  for (const auto &e : kTable)
    if (e.dtype == d) return &e;
  return nullptr;
}
}  // namespace

size_t dtype_size(DType d) noexcept {
  const Entry *e = find(d);
  return e ? e->size : 0;
}

bool dtype_valid(int code) noexcept {
  return code >= 0 && code <= 255 && find(static_cast<DType>(code)) != nullptr;
}

std::string_view dtype_name(DType d) noexcept {
  const Entry *e = find(d);
  return e ? e->name : std::string_view{};
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto &e : kTable)
    if (e.name == name) return e.dtype;
  return std::nullopt;
}

}  // namespace pot::hash
