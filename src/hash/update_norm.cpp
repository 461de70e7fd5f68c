#include "hash/update_norm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "hash/safetensors.h"

namespace pot::hash {

namespace {

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

// The selected tensors of a state in name order, by name.
std::vector<const StTensor *> selected_tensors(const std::vector<StTensor> &state, const std::string &prefix) {
  std::vector<const StTensor *> out;
  for (const StTensor &e : state)
    if (floating(e.meta.dtype) && e.meta.name.compare(0, prefix.size(), prefix) == 0) out.push_back(&e);
  return out;
}

}  // namespace

UpdateAgreement update_agreement(const std::vector<StTensor> &pre, const std::vector<StTensor> &a,
                                 const std::vector<StTensor> &b, const std::string &prefix, uint64_t min_elements) {
  const auto p = selected_tensors(pre, prefix), x = selected_tensors(a, prefix), y = selected_tensors(b, prefix);
  if (p.empty()) fail(Status::kInvalidArgument, "no floating-point tensor named '{}*' in the states", prefix);
  if (x.size() != p.size() || y.size() != p.size())
    fail(Status::kInvalidArgument, "the states hold different numbers of tensors named '{}*' ({}, {} and {})", prefix,
         p.size(), x.size(), y.size());
  UpdateAgreement r;
  double error = 0, norm_a = 0, norm_b = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    const StTensor &t0 = *p[k], &ta = *x[k], &tb = *y[k];
    if (ta.meta.name != t0.meta.name || tb.meta.name != t0.meta.name)
      fail(Status::kInvalidArgument, "tensor '{}' is not in all three states", t0.meta.name);
    if (ta.meta.dtype != t0.meta.dtype || tb.meta.dtype != t0.meta.dtype || ta.meta.shape != t0.meta.shape ||
        tb.meta.shape != t0.meta.shape)
      fail(Status::kInvalidArgument, "tensor '{}' changes dtype or shape between the states", t0.meta.name);
    if (ta.data.size() != t0.data.size() || tb.data.size() != t0.data.size())
      fail(Status::kInvalidArgument, "tensor '{}' has a byte length that does not fit its shape", t0.meta.name);
    const DType d = t0.meta.dtype;
    const size_t esize = dtype_size(d);
    if (d == DType::kF16 || d == DType::kBF16) r.low_precision = true;
    double e = 0, na = 0, nb = 0;
    for (size_t off = 0; off < t0.data.size(); off += esize) {
      const double base = element(t0.data.data() + off, d);
      const double da = element(ta.data.data() + off, d) - base, db = element(tb.data.data() + off, d) - base;
      e += (da - db) * (da - db);
      na += da * da;
      nb += db * db;
    }
    error += e;
    norm_a += na;
    norm_b += nb;
    const uint64_t elements = t0.data.size() / esize;
    const double ref = std::sqrt(std::max(na, nb));
    if (elements >= min_elements && ref > 0 && (d == DType::kF32 || d == DType::kF64)) {
      const double rel = std::sqrt(e) / ref;
      if (rel > r.worst_relative || r.worst_tensor.empty()) {
        r.worst_relative = rel;
        r.worst_tensor = t0.meta.name;
        r.worst_elements = elements;
      }
    }
  }
  r.error = std::sqrt(error);
  r.reference = std::sqrt(std::max(norm_a, norm_b));
  r.relative = r.reference > 0 ? r.error / r.reference : 0;
  return r;
}

double update_norm(const SafetensorsFile &pre, const SafetensorsFile &post,
                   const std::string &prefix) {
  return update_norm(tensor_views(pre), tensor_views(post), prefix);
}

}  // namespace pot::hash
