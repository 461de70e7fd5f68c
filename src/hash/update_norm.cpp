#include "hash/update_norm.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "hash/safetensors.h"

namespace pot::hash {

namespace {

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);                            // subnormal or zero
  else if (exp == 31) v = mant ? std::nan("") : INFINITY;             // NaN or infinity
  else v = std::ldexp(mant + 1024, exp - 25);                         // normal
  return sign ? -v : v;
}

double element(const uint8_t *p, DType t) {
  switch (t) {
    case DType::kF16: return half_to_double(static_cast<uint16_t>(p[0] | p[1] << 8));
    case DType::kBF16: {
      const uint32_t bits = static_cast<uint32_t>(p[0] | p[1] << 8) << 16;
      return std::bit_cast<float>(bits);
    }
    case DType::kF32: {
      uint32_t bits;
      std::memcpy(&bits, p, 4);
      return std::bit_cast<float>(bits);
    }
    case DType::kF64: {
      uint64_t bits;
      std::memcpy(&bits, p, 8);
      return std::bit_cast<double>(bits);
    }
    default: return 0;
  }
}

bool floating(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64; }

}  // namespace

double update_norm(const std::vector<StTensor> &pre, const std::vector<StTensor> &post,
                   const std::string &prefix) {
  auto selected = [&](const StTensor &e) {
    return floating(e.meta.dtype) && e.meta.name.compare(0, prefix.size(), prefix) == 0;
  };
  // Both lists are in bytewise name order: walk them together.
  size_t i = 0, j = 0;
  double sum = 0;
  size_t tensors = 0;
  for (;;) {
    while (i < pre.size() && !selected(pre[i])) ++i;
    while (j < post.size() && !selected(post[j])) ++j;
    if (i == pre.size() && j == post.size()) break;
    if (i == pre.size() || j == post.size() || pre[i].meta.name != post[j].meta.name) {
      const std::string name = i == pre.size() ? post[j].meta.name : pre[i].meta.name;
      fail(Status::kInvalidArgument, "tensor '{}' is in only one of the two states", name);
    }
    const StTensor &a = pre[i], &b = post[j];
    if (a.meta.dtype != b.meta.dtype || a.meta.shape != b.meta.shape)
      fail(Status::kInvalidArgument, "tensor '{}' changes dtype or shape between the two states", a.meta.name);
    const size_t esize = dtype_size(a.meta.dtype);
    if (a.data.size() != b.data.size())
      fail(Status::kInvalidArgument, "tensor '{}' has a byte length that does not fit its shape", a.meta.name);
    for (size_t off = 0; off < a.data.size(); off += esize) {
      const double d = element(b.data.data() + off, a.meta.dtype) - element(a.data.data() + off, a.meta.dtype);
      sum += d * d;
    }
    ++tensors;
    ++i;
    ++j;
  }
  if (tensors == 0) fail(Status::kInvalidArgument, "no floating-point tensor named '{}*' in the states", prefix);
  return std::sqrt(sum);
}

namespace {
std::vector<StTensor> views(const SafetensorsFile &f) {
  std::vector<StTensor> v;
  v.reserve(f.size());
  for (size_t i = 0; i < f.size(); ++i) v.push_back({f.entry(i).meta, f.data(i)});
  return v;
}
}  // namespace

double update_norm(const SafetensorsFile &pre, const SafetensorsFile &post,
                   const std::string &prefix) {
  return update_norm(views(pre), views(post), prefix);
}

}  // namespace pot::hash
