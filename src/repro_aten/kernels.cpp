#include "repro_aten/kernels.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <fmt/format.h>

#include "repro/arith.h"
#include "repro/matmul.h"
#include "repro_aten/gate.h"

namespace pot::repro_aten {

namespace {

using repro::FpEnvironment;

// Whether `op` computes in pot-repro/1 here: inside a Scope, on binary32. A
// floating-point type the arithmetic does not define is a violation (the
// caller then runs ATen's kernel, whose result the scope voids).
bool use_repro(const char *op, at::ScalarType t) {
  if (!active()) return false;
  if (t == at::kFloat) return true;
  if (at::isFloatingType(t) || at::isComplexType(t))
    note_violation(fmt::format("{} on {} has no pot-repro/1 kernel (the arithmetic defines binary32 only)", op,
                               c10::toString(t)));
  return false;
}

float scalar_f32(const at::Scalar &s) { return s.to<float>(); }

// ---------------------------------------------------------------- elementwise

// Runs f(v) -> float over a built iterator whose operands are binary32:
// output 0, then NIn inputs. Each element is independent, so any split of
// the iteration across threads gives the same bits.
template <size_t NIn, class F>
at::Tensor run(at::TensorIterator &iter, F f) {
  TORCH_CHECK(iter.common_dtype() == at::kFloat, "pot-repro/1: expected binary32 operands, got ",
              iter.common_dtype());
  iter.for_each([&](char **data, const int64_t *strides, int64_t n, int64_t outer) {
    FpEnvironment env;
    constexpr size_t nt = NIn + 1;
    char *p[nt];
    for (size_t t = 0; t < nt; ++t) p[t] = data[t];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < n; ++i) {
        float v[NIn];
        for (size_t t = 0; t < NIn; ++t) v[t] = *reinterpret_cast<const float *>(p[t + 1] + i * strides[t + 1]);
        *reinterpret_cast<float *>(p[0] + i * strides[0]) = f(v);
      }
      for (size_t t = 0; t < nt; ++t) p[t] += strides[nt + t];
    }
  });
  iter.cast_outputs();
  return iter.output();
}

template <class F>
at::Tensor unary(at::Tensor out, const at::Tensor &a, F f) {
  auto iter = at::TensorIterator::unary_op(out, a);
  return run<1>(iter, f);
}
template <class F>
at::Tensor binary(at::Tensor out, const at::Tensor &a, const at::Tensor &b, F f, bool float_op = false) {
  auto iter = float_op ? at::TensorIterator::binary_float_op(out, a, b) : at::TensorIterator::binary_op(out, a, b);
  return run<2>(iter, f);
}
template <class F>
at::Tensor ternary(at::Tensor out, const at::Tensor &a, const at::Tensor &b, const at::Tensor &c, F f) {
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(true)
                  .add_owned_output(out)
                  .add_owned_input(a)
                  .add_owned_input(b)
                  .add_owned_input(c)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  return run<3>(iter, f);
}

at::ScalarType type2(const at::Tensor &a, const at::Tensor &b) { return at::result_type(a, b); }
at::ScalarType type3(const at::Tensor &a, const at::Tensor &b, const at::Tensor &c) {
  return c10::promoteTypes(type2(a, b), type2(a, c));
}

// The per-element definitions (PROTOCOL 14.6): one rounding per operation.
struct AddOp {
  float alpha;
  float operator()(const float *v) const { return v[0] + alpha * v[1]; }
};
struct SubOp {
  float alpha;
  float operator()(const float *v) const { return v[0] - alpha * v[1]; }
};
struct MulOp {
  float operator()(const float *v) const { return v[0] * v[1]; }
};
struct DivOp {
  float operator()(const float *v) const { return v[0] / v[1]; }
};
struct MaximumOp {
  float operator()(const float *v) const {
    const float a = v[0], b = v[1];
    if (std::isnan(a) || std::isnan(b)) return a + b;
    if (a != b) return a > b ? a : b;
    return std::signbit(a) ? b : a;  // max(-0, +0) = +0
  }
};
struct SqrtOp {
  float operator()(const float *v) const { return std::sqrt(v[0]); }
};
struct ReciprocalOp {
  float operator()(const float *v) const { return 1.0f / v[0]; }
};
struct NegOp {
  float operator()(const float *v) const { return -v[0]; }
};
struct ClampOp {
  bool has_min, has_max;
  float lo, hi;
  float operator()(const float *v) const {
    float x = v[0];
    if (std::isnan(x)) return x;
    if (has_min && x < lo) x = lo;
    if (has_max && x > hi) x = hi;
    return x;
  }
};
struct AddcmulOp {
  float value;
  float operator()(const float *v) const { return v[0] + (value * v[1]) * v[2]; }
};
struct AddcdivOp {
  float value;
  float operator()(const float *v) const { return v[0] + value * (v[1] / v[2]); }
};
struct LerpOp {
  float w;
  float operator()(const float *v) const {
    const float d = v[1] - v[0];
    return std::fabs(w) < 0.5f ? v[0] + w * d : v[1] - d * (1.0f - w);
  }
};
struct ThresholdBackwardOp {
  float threshold;
  float operator()(const float *v) const { return v[1] <= threshold ? 0.0f : v[0]; }  // v: grad, self
};

// add / sub (with alpha): functional, in-place, out.
#define POT_REPRO_ALPHA(op, Op)                                                                          \
  at::Tensor op##_tensor(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha) {            \
    if (!use_repro("aten::" #op ".Tensor", type2(a, b))) return at::cpu::op(a, b, alpha);                \
    return binary(at::Tensor(), a, b, Op{scalar_f32(alpha)});                                            \
  }                                                                                                      \
  at::Tensor &op##_inplace(at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha) {                \
    if (!use_repro("aten::" #op "_.Tensor", type2(a, b))) return at::cpu::op##_(a, b, alpha);            \
    binary(a, a, b, Op{scalar_f32(alpha)});                                                              \
    return a;                                                                                            \
  }                                                                                                      \
  at::Tensor &op##_out(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha, at::Tensor &out) { \
    if (!use_repro("aten::" #op ".out", type2(a, b))) return at::cpu::op##_outf(a, b, alpha, out);       \
    binary(out, a, b, Op{scalar_f32(alpha)});                                                            \
    return out;                                                                                          \
  }
POT_REPRO_ALPHA(add, AddOp)
POT_REPRO_ALPHA(sub, SubOp)
#undef POT_REPRO_ALPHA

// The binary operators without a scalar argument: functional, in-place, out.
#define POT_REPRO_BINARY(op, Op, float_op)                                                        \
  at::Tensor op##_tensor(const at::Tensor &a, const at::Tensor &b) {                              \
    if (!use_repro("aten::" #op ".Tensor", type2(a, b))) return at::cpu::op(a, b);                \
    return binary(at::Tensor(), a, b, Op{}, float_op);                                            \
  }                                                                                               \
  at::Tensor &op##_inplace(at::Tensor &a, const at::Tensor &b) {                                  \
    if (!use_repro("aten::" #op "_.Tensor", type2(a, b))) return at::cpu::op##_(a, b);            \
    binary(a, a, b, Op{}, float_op);                                                              \
    return a;                                                                                     \
  }                                                                                               \
  at::Tensor &op##_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {               \
    if (!use_repro("aten::" #op ".out", type2(a, b))) return at::cpu::op##_outf(a, b, out);       \
    binary(out, a, b, Op{}, float_op);                                                            \
    return out;                                                                                   \
  }
POT_REPRO_BINARY(mul, MulOp, false)
POT_REPRO_BINARY(div, DivOp, true)
#undef POT_REPRO_BINARY

at::Tensor maximum_tensor(const at::Tensor &a, const at::Tensor &b) {
  if (!use_repro("aten::maximum.default", type2(a, b))) return at::cpu::maximum(a, b);
  return binary(at::Tensor(), a, b, MaximumOp{});
}
at::Tensor &maximum_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
  if (!use_repro("aten::maximum.out", type2(a, b))) return at::cpu::maximum_outf(a, b, out);
  binary(out, a, b, MaximumOp{});
  return out;
}

// The unary operators: functional, in-place, out.
#define POT_REPRO_UNARY(op, Op)                                                                  \
  at::Tensor op##_fn(const at::Tensor &a) {                                                      \
    if (!use_repro("aten::" #op ".default", a.scalar_type())) return at::cpu::op(a);             \
    return unary(at::Tensor(), a, Op{});                                                         \
  }                                                                                              \
  at::Tensor &op##_inplace(at::Tensor &a) {                                                      \
    if (!use_repro("aten::" #op "_.default", a.scalar_type())) return at::cpu::op##_(a);         \
    unary(a, a, Op{});                                                                           \
    return a;                                                                                    \
  }                                                                                              \
  at::Tensor &op##_out(const at::Tensor &a, at::Tensor &out) {                                   \
    if (!use_repro("aten::" #op ".out", a.scalar_type())) return at::cpu::op##_outf(a, out);     \
    unary(out, a, Op{});                                                                         \
    return out;                                                                                  \
  }
POT_REPRO_UNARY(sqrt, SqrtOp)
POT_REPRO_UNARY(reciprocal, ReciprocalOp)
POT_REPRO_UNARY(neg, NegOp)
#undef POT_REPRO_UNARY

ClampOp clamp_op(const c10::optional<at::Scalar> &min, const c10::optional<at::Scalar> &max) {
  return ClampOp{min.has_value(), max.has_value(), min ? scalar_f32(*min) : 0.0f, max ? scalar_f32(*max) : 0.0f};
}
at::Tensor clamp_fn(const at::Tensor &a, const c10::optional<at::Scalar> &min, const c10::optional<at::Scalar> &max) {
  if (!use_repro("aten::clamp.default", a.scalar_type())) return at::cpu::clamp(a, min, max);
  TORCH_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  return unary(at::Tensor(), a, clamp_op(min, max));
}
at::Tensor &clamp_inplace(at::Tensor &a, const c10::optional<at::Scalar> &min, const c10::optional<at::Scalar> &max) {
  if (!use_repro("aten::clamp_.default", a.scalar_type())) return at::cpu::clamp_(a, min, max);
  TORCH_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  unary(a, a, clamp_op(min, max));
  return a;
}
at::Tensor &clamp_out(const at::Tensor &a, const c10::optional<at::Scalar> &min, const c10::optional<at::Scalar> &max,
                      at::Tensor &out) {
  if (!use_repro("aten::clamp.out", a.scalar_type())) return at::cpu::clamp_outf(a, min, max, out);
  TORCH_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  unary(out, a, clamp_op(min, max));
  return out;
}
at::Tensor clamp_min_fn(const at::Tensor &a, const at::Scalar &min) {
  if (!use_repro("aten::clamp_min.default", a.scalar_type())) return at::cpu::clamp_min(a, min);
  return unary(at::Tensor(), a, clamp_op(min, c10::nullopt));
}
at::Tensor &clamp_min_inplace(at::Tensor &a, const at::Scalar &min) {
  if (!use_repro("aten::clamp_min_.default", a.scalar_type())) return at::cpu::clamp_min_(a, min);
  unary(a, a, clamp_op(min, c10::nullopt));
  return a;
}
at::Tensor &clamp_min_out(const at::Tensor &a, const at::Scalar &min, at::Tensor &out) {
  if (!use_repro("aten::clamp_min.out", a.scalar_type())) return at::cpu::clamp_min_outf(a, min, out);
  unary(out, a, clamp_op(min, c10::nullopt));
  return out;
}
// relu(x) = clamp_min(x, 0).
at::Tensor relu_fn(const at::Tensor &a) {
  if (!use_repro("aten::relu.default", a.scalar_type())) return at::cpu::relu(a);
  return unary(at::Tensor(), a, clamp_op(at::Scalar(0.0), c10::nullopt));
}
at::Tensor &relu_inplace(at::Tensor &a) {
  if (!use_repro("aten::relu_.default", a.scalar_type())) return at::cpu::relu_(a);
  unary(a, a, clamp_op(at::Scalar(0.0), c10::nullopt));
  return a;
}
at::Tensor threshold_backward_fn(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &threshold) {
  if (!use_repro("aten::threshold_backward.default", type2(grad, self)))
    return at::cpu::threshold_backward(grad, self, threshold);
  return binary(at::Tensor(), grad, self, ThresholdBackwardOp{scalar_f32(threshold)});
}
at::Tensor &threshold_backward_out(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &threshold,
                                   at::Tensor &out) {
  if (!use_repro("aten::threshold_backward.grad_input", type2(grad, self)))
    return at::cpu::threshold_backward_outf(grad, self, threshold, out);
  binary(out, grad, self, ThresholdBackwardOp{scalar_f32(threshold)});
  return out;
}

// addcmul / addcdiv / lerp
#define POT_REPRO_ADDC(op, Op)                                                                              \
  at::Tensor op##_fn(const at::Tensor &s, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &v) { \
    if (!use_repro("aten::" #op ".default", type3(s, t1, t2)))               \
      return at::cpu::op(s, t1, t2, v);                                                                     \
    return ternary(at::Tensor(), s, t1, t2, Op{scalar_f32(v)});                                             \
  }                                                                                                         \
  at::Tensor &op##_inplace(at::Tensor &s, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &v) { \
    if (!use_repro("aten::" #op "_.default", type3(s, t1, t2)))              \
      return at::cpu::op##_(s, t1, t2, v);                                                                  \
    ternary(s, s, t1, t2, Op{scalar_f32(v)});                                                               \
    return s;                                                                                               \
  }                                                                                                         \
  at::Tensor &op##_out(const at::Tensor &s, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &v, \
                       at::Tensor &out) {                                                                   \
    if (!use_repro("aten::" #op ".out", type3(s, t1, t2)))                   \
      return at::cpu::op##_outf(s, t1, t2, v, out);                                                         \
    ternary(out, s, t1, t2, Op{scalar_f32(v)});                                                             \
    return out;                                                                                             \
  }
POT_REPRO_ADDC(addcmul, AddcmulOp)
POT_REPRO_ADDC(addcdiv, AddcdivOp)
#undef POT_REPRO_ADDC

at::Tensor lerp_fn(const at::Tensor &s, const at::Tensor &end, const at::Scalar &w) {
  if (!use_repro("aten::lerp.Scalar", type2(s, end))) return at::cpu::lerp(s, end, w);
  return binary(at::Tensor(), s, end, LerpOp{scalar_f32(w)});
}
at::Tensor &lerp_inplace(at::Tensor &s, const at::Tensor &end, const at::Scalar &w) {
  if (!use_repro("aten::lerp_.Scalar", type2(s, end))) return at::cpu::lerp_(s, end, w);
  binary(s, s, end, LerpOp{scalar_f32(w)});
  return s;
}
at::Tensor &lerp_out(const at::Tensor &s, const at::Tensor &end, const at::Scalar &w, at::Tensor &out) {
  if (!use_repro("aten::lerp.Scalar_out", type2(s, end))) return at::cpu::lerp_outf(s, end, w, out);
  binary(out, s, end, LerpOp{scalar_f32(w)});
  return out;
}

// ---------------------------------------------------------------- reductions

// The reduced dims of `dim` (none or empty: all), sorted.
std::vector<int64_t> reduced_dims(const at::Tensor &self, at::OptionalIntArrayRef dim) {
  const int64_t nd = self.dim();
  std::vector<bool> reduce(static_cast<size_t>(nd), !dim.has_value() || dim->empty());
  if (dim.has_value())
    for (int64_t d : *dim) reduce[static_cast<size_t>(at::maybe_wrap_dim(d, std::max<int64_t>(nd, 1)))] = nd > 0;
  std::vector<int64_t> out;
  for (int64_t d = 0; d < nd; ++d)
    if (reduce[static_cast<size_t>(d)]) out.push_back(d);
  return out;
}

// Each output's elements are the reduced dims' in row-major order (the
// reduced dims in increasing order); row_fn(pointer, count) reduces one.
template <class RowFn>
at::Tensor reduce_rows(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, RowFn row_fn) {
  const std::vector<int64_t> red = reduced_dims(self, dim);
  std::vector<int64_t> perm, out_shape, kept_shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool r = std::find(red.begin(), red.end(), d) != red.end();
    if (!r) {
      perm.push_back(d);
      kept_shape.push_back(self.size(d));
    }
    if (!r) out_shape.push_back(self.size(d));
    else if (keepdim) out_shape.push_back(1);
  }
  int64_t inner = 1;
  for (int64_t d : red) {
    perm.push_back(d);
    inner *= self.size(d);
  }
  const at::Tensor x = self.dim() == 0 ? self.reshape({1}) : self.permute(perm).contiguous();
  int64_t outer = 1;
  for (int64_t s : kept_shape) outer *= s;
  at::Tensor out = at::empty({outer}, self.options());
  const float *px = x.data_ptr<float>();
  float *po = out.data_ptr<float>();
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1));
  at::parallel_for(0, outer, grain, [&](int64_t r0, int64_t r1) {
    FpEnvironment env;
    for (int64_t r = r0; r < r1; ++r) po[r] = row_fn(px + r * inner, inner);
  });
  return out.view(out_shape);
}

float row_sum(const float *x, int64_t n) { return repro::lane_sum(x, n); }
float row_norm2(const float *x, int64_t n) { return std::sqrt(repro::lane_sum_squares(x, n)); }

at::Tensor sum_dim(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                   c10::optional<at::ScalarType> dtype) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  if (t != self.scalar_type() || !use_repro("aten::sum.dim_IntList", t)) return at::cpu::sum(self, dim, keepdim, dtype);
  return reduce_rows(self, dim, keepdim, row_sum);
}
at::Tensor &sum_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype, at::Tensor &out) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  if (t != self.scalar_type() || out.scalar_type() != t || !use_repro("aten::sum.IntList_out", t))
    return at::cpu::sum_outf(self, dim, keepdim, dtype, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_sum);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// The 2-norm of pot-repro/1: sqrt of the sum of squares in the sum order.
// Other orders are not defined: a violation.
bool norm2(const char *op, const at::Tensor &self, const c10::optional<at::Scalar> &p) {
  if (!use_repro(op, self.scalar_type())) return false;
  if (p.has_value() && p->toDouble() != 2.0) {
    note_violation(fmt::format("{} of order {} has no pot-repro/1 kernel (the arithmetic defines the 2-norm)", op,
                               p->toDouble()));
    return false;
  }
  return true;
}
at::Tensor norm_dim(const at::Tensor &self, const c10::optional<at::Scalar> &p, at::IntArrayRef dim, bool keepdim) {
  if (!norm2("aten::norm.ScalarOpt_dim", self, p)) return at::cpu::norm(self, p, dim, keepdim);
  return reduce_rows(self, dim, keepdim, row_norm2);
}
at::Tensor &norm_out(const at::Tensor &self, const c10::optional<at::Scalar> &p, at::IntArrayRef dim, bool keepdim,
                     at::Tensor &out) {
  if (out.scalar_type() != self.scalar_type() || !norm2("aten::norm.out", self, p))
    return at::cpu::norm_outf(self, p, dim, keepdim, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_norm2);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}
at::Tensor vector_norm(const at::Tensor &self, const at::Scalar &ord, at::OptionalIntArrayRef dim, bool keepdim,
                       c10::optional<at::ScalarType> dtype) {
  if ((dtype && *dtype != self.scalar_type()) || !norm2("aten::linalg_vector_norm.default", self, ord))
    return at::cpu::linalg_vector_norm(self, ord, dim, keepdim, dtype);
  return reduce_rows(self, dim, keepdim, row_norm2);
}
at::Tensor &vector_norm_out(const at::Tensor &self, const at::Scalar &ord, at::OptionalIntArrayRef dim, bool keepdim,
                            c10::optional<at::ScalarType> dtype, at::Tensor &out) {
  if ((dtype && *dtype != self.scalar_type()) || out.scalar_type() != self.scalar_type() ||
      !norm2("aten::linalg_vector_norm.out", self, ord))
    return at::cpu::linalg_vector_norm_outf(self, ord, dim, keepdim, dtype, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_norm2);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// ---------------------------------------------------------------- matrix products

// a [m, k] @ b [k, n] by the chains of repro/matmul.h, threads by rows.
at::Tensor product(const at::Tensor &a, const at::Tensor &b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "pot-repro/1: mm expects 2-D matrices, got ", a.dim(), "-D and ",
              b.dim(), "-D");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
              " and ", b.size(0), "x", b.size(1), ")");
  const at::Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor c = at::empty({m, n}, a.options().memory_format(at::MemoryFormat::Contiguous));
  if (m == 0 || n == 0) return c;
  const float *pa = ac.data_ptr<float>(), *pb = bc.data_ptr<float>();
  float *pc = c.data_ptr<float>();
  const repro::Isa isa = repro::best_isa();
  const int64_t grain = std::max<int64_t>(4, 65536 / std::max<int64_t>(n * std::max<int64_t>(k, 1), 1));
  at::parallel_for(0, m, grain, [&](int64_t r0, int64_t r1) {
    FpEnvironment env;
    repro::matmul_rows(pa, k, pb, n, pc, n, k, n, r0, r1, isa);
  });
  return c;
}

at::Tensor mm_fn(const at::Tensor &a, const at::Tensor &b) {
  if (!use_repro("aten::mm.default", type2(a, b))) return at::cpu::mm(a, b);
  return product(a, b);
}
at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
  if (!use_repro("aten::mm.out", type2(a, b))) return at::cpu::mm_outf(a, b, out);
  at::Tensor r = product(a, b);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// beta * self + alpha * (m1 @ m2): each product rounded, then the sum; beta
// = 0 does not read self (ATen's rule: NaN there does not propagate).
at::Tensor addmm_value(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                       const at::Scalar &alpha) {
  at::Tensor prod = product(m1, m2);
  const float a = scalar_f32(alpha), bt = scalar_f32(beta);
  if (bt == 0.0f) return unary(at::Tensor(), prod, [a](const float *v) { return a * v[0]; });
  const at::Tensor s = self.expand(prod.sizes());
  return binary(at::Tensor(), s, prod, [a, bt](const float *v) { return bt * v[0] + a * v[1]; });
}
at::Tensor addmm_fn(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                    const at::Scalar &alpha) {
  if (!use_repro("aten::addmm.default", type3(self, m1, m2))) return at::cpu::addmm(self, m1, m2, beta, alpha);
  return addmm_value(self, m1, m2, beta, alpha);
}
at::Tensor &addmm_inplace(at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                          const at::Scalar &alpha) {
  if (!use_repro("aten::addmm_.default", type3(self, m1, m2))) return at::cpu::addmm_(self, m1, m2, beta, alpha);
  self.copy_(addmm_value(self, m1, m2, beta, alpha));
  return self;
}
at::Tensor &addmm_out(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                      const at::Scalar &alpha, at::Tensor &out) {
  if (!use_repro("aten::addmm.out", type3(self, m1, m2))) return at::cpu::addmm_outf(self, m1, m2, beta, alpha, out);
  at::Tensor r = addmm_value(self, m1, m2, beta, alpha);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// ---------------------------------------------------------------- log_softmax, nll_loss

// Rows along `dim`: the tensor with dim moved last, contiguous.
template <class RowFn>
at::Tensor along_rows(const at::Tensor &x, const at::Tensor *y, int64_t dim, RowFn fn) {
  const int64_t d = at::maybe_wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  const bool moved = x.dim() > 0 && d != x.dim() - 1;
  const at::Tensor xr = (moved ? x.transpose(d, -1) : x).contiguous();
  const at::Tensor yr = y ? (moved ? y->transpose(d, -1) : *y).contiguous() : at::Tensor();
  at::Tensor out = at::empty(xr.sizes(), xr.options());
  const int64_t n = x.dim() == 0 ? 1 : xr.size(-1);
  const int64_t rows = n == 0 ? 0 : xr.numel() / n;
  const float *px = xr.data_ptr<float>(), *py = y ? yr.data_ptr<float>() : nullptr;
  float *po = out.data_ptr<float>();
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1));
  at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    FpEnvironment env;
    for (int64_t r = r0; r < r1; ++r) fn(px + r * n, py ? py + r * n : nullptr, n, po + r * n);
  });
  return moved ? out.transpose(d, -1).contiguous() : out;
}

at::Tensor log_softmax_fn(const at::Tensor &self, int64_t dim, bool half_to_float) {
  if (half_to_float || !use_repro("aten::_log_softmax.default", self.scalar_type()))
    return at::cpu::_log_softmax(self, dim, half_to_float);
  return along_rows(self, nullptr, dim,
                    [](const float *x, const float *, int64_t n, float *o) { repro::log_softmax_row(x, n, o); });
}
at::Tensor log_softmax_backward_fn(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                                   at::ScalarType input_dtype) {
  if (input_dtype != at::kFloat || !use_repro("aten::_log_softmax_backward_data.default", type2(grad, output)))
    return at::cpu::_log_softmax_backward_data(grad, output, dim, input_dtype);
  return along_rows(grad, &output, dim, [](const float *g, const float *y, int64_t n, float *o) {
    repro::log_softmax_backward_row(g, y, n, o);
  });
}

// nll_loss over [N, C] (or [C]) log-probabilities and int64 targets
// (PROTOCOL 14.6): c_i = -(x[i][t_i] * w[t_i]) (w = 1 without weights);
// "sum" adds the c_i in the sum order (lane i), an ignored target adding
// nothing; "mean" divides that by the sum of the w[t_i] in the same order.
struct NllInputs {
  at::Tensor x, target, weight;
  int64_t n = 0, classes = 0;
};
NllInputs nll_inputs(const at::Tensor &self, const at::Tensor &target, const c10::optional<at::Tensor> &weight) {
  TORCH_CHECK(self.dim() == 1 || self.dim() == 2, "pot-repro/1: nll_loss expects 1-D or 2-D input, got ", self.dim(),
              "-D");
  TORCH_CHECK(target.scalar_type() == at::kLong, "nll_loss: expected target of dtype Long, got ",
              target.scalar_type());
  NllInputs in;
  in.x = self.dim() == 1 ? self.unsqueeze(0).contiguous() : self.contiguous();
  in.target = target.reshape({-1}).contiguous();
  in.n = in.x.size(0);
  in.classes = in.x.size(1);
  TORCH_CHECK(in.target.numel() == in.n, "nll_loss: expected ", in.n, " targets, got ", in.target.numel());
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->numel() == in.classes, "nll_loss: weight of ", weight->numel(), " elements for ",
                in.classes, " classes");
    in.weight = weight->to(at::kFloat).contiguous();
  }
  return in;
}
bool nll_repro(const char *op, const at::Tensor &self, const c10::optional<at::Tensor> &weight) {
  at::ScalarType t = self.scalar_type();
  if (weight.has_value() && weight->defined()) t = type2(self, *weight);
  return use_repro(op, t);
}

std::tuple<at::Tensor, at::Tensor> nll_forward(const at::Tensor &self, const at::Tensor &target,
                                               const c10::optional<at::Tensor> &weight, int64_t reduction,
                                               int64_t ignore_index) {
  if (!nll_repro("aten::nll_loss_forward.default", self, weight))
    return at::cpu::nll_loss_forward(self, target, weight, reduction, ignore_index);
  FpEnvironment env;
  const NllInputs in = nll_inputs(self, target, weight);
  const float *x = in.x.data_ptr<float>(), *w = in.weight.defined() ? in.weight.data_ptr<float>() : nullptr;
  const int64_t *t = in.target.data_ptr<int64_t>();
  at::Tensor per = at::empty({in.n}, self.options());
  float *pp = per.data_ptr<float>();
  float loss_lanes[repro::kLanes] = {}, weight_lanes[repro::kLanes] = {};
  for (int64_t i = 0; i < in.n; ++i) {
    const int64_t c = t[i];
    if (c == ignore_index) {
      pp[i] = 0.0f;
      continue;
    }
    TORCH_CHECK(c >= 0 && c < in.classes, "Target ", c, " is out of bounds.");
    const float wc = w ? w[c] : 1.0f;
    pp[i] = -(x[i * in.classes + c] * wc);
    loss_lanes[static_cast<size_t>(i) % repro::kLanes] += pp[i];
    weight_lanes[static_cast<size_t>(i) % repro::kLanes] += wc;
  }
  const float total_weight = repro::pairwise(weight_lanes);
  at::Tensor tw = at::scalar_tensor(total_weight, self.options());
  if (reduction == at::Reduction::None && self.dim() == 2) return {per, tw};
  if (reduction == at::Reduction::None) return {per.reshape({}), tw};
  const float sum = repro::pairwise(loss_lanes);
  const float out = reduction == at::Reduction::Mean ? sum / total_weight : sum;
  return {at::scalar_tensor(out, self.options()), tw};
}

at::Tensor nll_backward_value(const at::Tensor &grad_output, const at::Tensor &self, const at::Tensor &target,
                              const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
                              const at::Tensor &total_weight) {
  FpEnvironment env;
  const NllInputs in = nll_inputs(self, target, weight);
  const float *w = in.weight.defined() ? in.weight.data_ptr<float>() : nullptr;
  const int64_t *t = in.target.data_ptr<int64_t>();
  at::Tensor grad = at::zeros({in.n, in.classes}, self.options());
  float *pg = grad.data_ptr<float>();
  const at::Tensor go = grad_output.to(at::kFloat).contiguous();
  const float *pgo = go.data_ptr<float>();
  const float tw = total_weight.to(at::kFloat).item<float>();
  const bool per_sample = reduction == at::Reduction::None;
  TORCH_CHECK(!per_sample || go.numel() == in.n, "nll_loss_backward: grad_output of ", go.numel(),
              " elements for ", in.n, " samples");
  for (int64_t i = 0; i < in.n; ++i) {
    const int64_t c = t[i];
    if (c == ignore_index) continue;
    TORCH_CHECK(c >= 0 && c < in.classes, "Target ", c, " is out of bounds.");
    float d = per_sample ? pgo[i] : pgo[0];
    if (reduction == at::Reduction::Mean) d = d / tw;
    d = -d;
    pg[i * in.classes + c] = w ? w[c] * d : d;
  }
  return self.dim() == 1 ? grad.reshape({in.classes}) : grad;
}
at::Tensor nll_backward(const at::Tensor &grad_output, const at::Tensor &self, const at::Tensor &target,
                        const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
                        const at::Tensor &total_weight) {
  if (!nll_repro("aten::nll_loss_backward.default", self, weight))
    return at::cpu::nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  return nll_backward_value(grad_output, self, target, weight, reduction, ignore_index, total_weight);
}

}  // namespace

void register_kernels(torch::Library &lib, std::vector<std::string> &names) {
  auto add = [&](const char *name, auto fn) {
    lib.impl(name, fn);
    std::string key = std::string("aten::") + name;
    if (key.find('.') == std::string::npos) key += ".default";
    names.push_back(std::move(key));
  };
  add("add.Tensor", TORCH_FN(add_tensor));
  add("add_.Tensor", TORCH_FN(add_inplace));
  add("add.out", TORCH_FN(add_out));
  add("sub.Tensor", TORCH_FN(sub_tensor));
  add("sub_.Tensor", TORCH_FN(sub_inplace));
  add("sub.out", TORCH_FN(sub_out));
  add("mul.Tensor", TORCH_FN(mul_tensor));
  add("mul_.Tensor", TORCH_FN(mul_inplace));
  add("mul.out", TORCH_FN(mul_out));
  add("div.Tensor", TORCH_FN(div_tensor));
  add("div_.Tensor", TORCH_FN(div_inplace));
  add("div.out", TORCH_FN(div_out));
  add("maximum", TORCH_FN(maximum_tensor));
  add("maximum.out", TORCH_FN(maximum_out));
  add("sqrt", TORCH_FN(sqrt_fn));
  add("sqrt_", TORCH_FN(sqrt_inplace));
  add("sqrt.out", TORCH_FN(sqrt_out));
  add("reciprocal", TORCH_FN(reciprocal_fn));
  add("reciprocal_", TORCH_FN(reciprocal_inplace));
  add("reciprocal.out", TORCH_FN(reciprocal_out));
  add("neg", TORCH_FN(neg_fn));
  add("neg_", TORCH_FN(neg_inplace));
  add("neg.out", TORCH_FN(neg_out));
  add("clamp", TORCH_FN(clamp_fn));
  add("clamp_", TORCH_FN(clamp_inplace));
  add("clamp.out", TORCH_FN(clamp_out));
  add("clamp_min", TORCH_FN(clamp_min_fn));
  add("clamp_min_", TORCH_FN(clamp_min_inplace));
  add("clamp_min.out", TORCH_FN(clamp_min_out));
  add("relu", TORCH_FN(relu_fn));
  add("relu_", TORCH_FN(relu_inplace));
  add("threshold_backward", TORCH_FN(threshold_backward_fn));
  add("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
  add("addcmul", TORCH_FN(addcmul_fn));
  add("addcmul_", TORCH_FN(addcmul_inplace));
  add("addcmul.out", TORCH_FN(addcmul_out));
  add("addcdiv", TORCH_FN(addcdiv_fn));
  add("addcdiv_", TORCH_FN(addcdiv_inplace));
  add("addcdiv.out", TORCH_FN(addcdiv_out));
  add("lerp.Scalar", TORCH_FN(lerp_fn));
  add("lerp_.Scalar", TORCH_FN(lerp_inplace));
  add("lerp.Scalar_out", TORCH_FN(lerp_out));
  add("sum.dim_IntList", TORCH_FN(sum_dim));
  add("sum.IntList_out", TORCH_FN(sum_out));
  add("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  add("norm.out", TORCH_FN(norm_out));
  add("linalg_vector_norm", TORCH_FN(vector_norm));
  add("linalg_vector_norm.out", TORCH_FN(vector_norm_out));
  add("mm", TORCH_FN(mm_fn));
  add("mm.out", TORCH_FN(mm_out));
  add("addmm", TORCH_FN(addmm_fn));
  add("addmm_", TORCH_FN(addmm_inplace));
  add("addmm.out", TORCH_FN(addmm_out));
  add("_log_softmax", TORCH_FN(log_softmax_fn));
  add("_log_softmax_backward_data", TORCH_FN(log_softmax_backward_fn));
  add("nll_loss_forward", TORCH_FN(nll_forward));
  add("nll_loss_backward", TORCH_FN(nll_backward));
}

}  // namespace pot::repro_aten
