#include "repro_aten/kernels.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <cmath>
#include <tuple>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "repro/arith.h"
#include "repro/elementwise.h"
#include "repro/matmul.h"
#include "repro_aten/gate.h"
#include "repro_aten/kernel_util.h"

namespace pot::repro_aten {

bool use_repro(const char *op, at::ScalarType t) {
  if (!active()) return false;
  if (t == at::kFloat) return true;
  if (at::isFloatingType(t) || at::isComplexType(t))
    note_violation(fmt::format("{} on {} has no pot-repro/1 kernel (the arithmetic defines binary32 only)", op,
                               c10::toString(t)));
  return false;
}

// The softmax backwards name the forward's input type: under a BF16 step
// they run on widened (binary32) operands and round their result to it.
static at::ScalarType bf16_as_f32(at::ScalarType t) { return t == at::kBFloat16 ? at::kFloat : t; }
static at::Tensor to_type(const at::Tensor &r, at::ScalarType t) { return r.scalar_type() == t ? r : r.to(t); }

// use_repro for an operator that converts its operand from `from` to `to`
// (a dtype argument, softmax's half_to_float): the arithmetic defines no
// such conversion inside an operator, so under a step it is a violation,
// never ATen's kernel in silence.
static bool use_repro_converting(const char *op, at::ScalarType from, at::ScalarType to) {
  if (from == to) return use_repro(op, from);
  if (active())
    note_violation(fmt::format("{} from {} to {} has no pot-repro/1 kernel (it converts inside the operator)", op,
                               c10::toString(from), c10::toString(to)));
  return false;
}

// a [m, k] @ b [k, n] by the chains of repro/matmul.h, threads by rows.
at::Tensor product(const at::Tensor &a, const at::Tensor &b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "pot-repro/1: mm expects 2-D matrices, got ", a.dim(), "-D and ",
              b.dim(), "-D");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
              " and ", b.size(0), "x", b.size(1), ")");
  // The operands are read through their strides (a transposed weight or
  // activation is not copied first).
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor c = at::empty({m, n}, a.options().memory_format(at::MemoryFormat::Contiguous));
  if (m == 0 || n == 0) return c;
  const repro::Operand oa{a.data_ptr<float>(), a.stride(0), a.stride(1)};
  const repro::Operand ob{b.data_ptr<float>(), b.stride(0), b.stride(1)};
  float *pc = c.data_ptr<float>();
  const repro::Isa isa = repro::best_isa();
  at::parallel_for(0, m, std::max<int64_t>(4, grain_for(n * std::max<int64_t>(k, 1), kProductSplit)), [&](int64_t r0, int64_t r1) {
    repro::FpEnvironment env;
    repro::matmul_rows(oa, ob, pc, n, k, n, r0, r1, isa);
  });
  return c;
}


namespace {

using repro::FpEnvironment;

// An .out overload's result: `out` resized as ATen's .out kernels resize it
// (a warning when a non-empty out changes shape), then r copied in.
at::Tensor &assign_out(at::Tensor &out, const at::Tensor &r) {
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

using IgnoreIndex = ArgOf<at::_ops::nll_loss_forward::schema, 4>::type;

// ---------------------------------------------------------------- elementwise

// Runs f(v) -> float over a built iterator whose operands are binary32:
// output 0, then NIn inputs. Each element is independent, so any split of
// the iteration across threads, and any vector width the compiler gives
// the contiguous loop (each lane one element's operations; nothing is
// contracted), gives the same bits. An operation with a vector path of its
// own (repro/elementwise.h) passes it as batch(out, in, n), called where
// every operand of the inner loop is contiguous; it gives f's bits too.
// The contiguous loop of run(): out[i] = f(in[0][i], ...). The compiler
// vectorises it across elements (each lane one element's operations, in
// the definition's order; -ffp-contract=off: nothing is contracted). The
// AVX2 instance gives the loop 8 lanes instead of the baseline's 4; f is
// inlined into it (its operations are the definition's, so the bits are
// the same for either width). Not "fma": a target with FMA may not
// contract either, but nothing here needs it.
template <size_t NIn, class F>
inline void contiguous_loop(float *out, const float *const *in, int64_t n, const F &f) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    float v[NIn];
    for (size_t t = 0; t < NIn; ++t) v[t] = in[t][i];
    out[i] = f(v);
  }
}
template <size_t NIn, class F>
[[gnu::target("avx2")]] void contiguous_loop_avx2(float *out, const float *const *in, int64_t n, const F &f) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    float v[NIn];
    for (size_t t = 0; t < NIn; ++t) v[t] = in[t][i];
    out[i] = f(v);
  }
}

constexpr int64_t kBroadcastBlock = 256;

template <size_t NIn, class F, class B = std::nullptr_t>
at::Tensor run(at::TensorIterator &iter, F f, B batch = nullptr) {
  TORCH_CHECK(iter.common_dtype() == at::kFloat, "pot-repro/1: expected binary32 operands, got ",
              iter.common_dtype());
  const bool avx2 = repro::runs(repro::Isa::kAvx2);
  iter.for_each([&](char **data, const int64_t *strides, int64_t n, int64_t outer) {
    FpEnvironment env;
    constexpr size_t nt = NIn + 1;
    bool contiguous = true, broadcast = false;
    for (size_t t = 0; t < nt; ++t) {
      const bool dense = strides[t] == static_cast<int64_t>(sizeof(float));
      const bool repeated = t > 0 && strides[t] == 0;  // a scalar operand (mul_(0.9), x / 2)
      contiguous = contiguous && (dense || repeated);
      broadcast = broadcast || repeated;
    }
    char *p[nt];
    for (size_t t = 0; t < nt; ++t) p[t] = data[t];
    for (int64_t o = 0; o < outer; ++o) {
      if (contiguous && broadcast) {
        // A repeated operand is read from a block of copies of its value
        // (this row's: it may change from row to row), so that the loop
        // stays the contiguous one.
        float *out = reinterpret_cast<float *>(p[0]);
        float copies[NIn][kBroadcastBlock];
        const int64_t filled = std::min(kBroadcastBlock, n);
        for (size_t t = 0; t < NIn; ++t)
          if (strides[t + 1] == 0) std::fill(copies[t], copies[t] + filled, *reinterpret_cast<const float *>(p[t + 1]));
        const float *in[NIn];
        for (int64_t i = 0; i < n; i += kBroadcastBlock) {
          const int64_t len = std::min(kBroadcastBlock, n - i);
          for (size_t t = 0; t < NIn; ++t)
            in[t] = strides[t + 1] == 0 ? copies[t] : reinterpret_cast<const float *>(p[t + 1]) + i;
          if (avx2) {
            contiguous_loop_avx2<NIn>(out + i, in, len, f);
          } else {
            contiguous_loop<NIn>(out + i, in, len, f);
          }
        }
      } else if (contiguous) {
        // The output is an input itself (an in-place operation) or shares
        // no element with one: TensorIterator refuses partial overlaps.
        float *out = reinterpret_cast<float *>(p[0]);
        const float *in[NIn];
        for (size_t t = 0; t < NIn; ++t) in[t] = reinterpret_cast<const float *>(p[t + 1]);
        if constexpr (std::is_same_v<B, std::nullptr_t>) {
          if (avx2) {
            contiguous_loop_avx2<NIn>(out, in, n, f);
          } else {
            contiguous_loop<NIn>(out, in, n, f);
          }
        } else {
          batch(out, in, n);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          float v[NIn];
          for (size_t t = 0; t < NIn; ++t) v[t] = *reinterpret_cast<const float *>(p[t + 1] + i * strides[t + 1]);
          *reinterpret_cast<float *>(p[0] + i * strides[0]) = f(v);
        }
      }
      for (size_t t = 0; t < nt; ++t) p[t] += strides[nt + t];
    }
  });
  iter.cast_outputs();
  return iter.output();
}

template <class F, class B = std::nullptr_t>
at::Tensor unary(at::Tensor out, const at::Tensor &a, F f, B batch = nullptr) {
  auto iter = at::TensorIterator::unary_op(out, a);
  return run<1>(iter, f, batch);
}
template <class F, class B = std::nullptr_t>
at::Tensor binary(at::Tensor out, const at::Tensor &a, const at::Tensor &b, F f, bool float_op = false,
                  B batch = nullptr) {
  auto iter = float_op ? at::TensorIterator::binary_float_op(out, a, b) : at::TensorIterator::binary_op(out, a, b);
  return run<2>(iter, f, batch);
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

// at::result_type is an operator of its own (dispatched, and seen by the
// gate's observer): operands of one type, the common case, skip it.
at::ScalarType type2(const at::Tensor &a, const at::Tensor &b) {
  return a.scalar_type() == b.scalar_type() ? a.scalar_type() : at::result_type(a, b);
}
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
struct TanhOp {
  float operator()(const float *v) const { return repro::tanh_f32(v[0]); }
};
struct SigmoidOp {
  float operator()(const float *v) const { return repro::sigmoid_f32(v[0]); }
};
POT_REPRO_UNARY(tanh, TanhOp)
POT_REPRO_UNARY(sigmoid, SigmoidOp)
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

// The activations' backward from their output y: sigmoid g * ((1 - y) * y),
// tanh g * (1 - y * y).
#define POT_REPRO_FROM_OUTPUT(op, expr)                                                                  \
  at::Tensor op##_fn(const at::Tensor &grad, const at::Tensor &out) {                                   \
    if (!use_repro("aten::" #op ".default", type2(grad, out))) return at::cpu::op(grad, out);           \
    return binary(at::Tensor(), grad, out, [](const float *v) { return expr; });                        \
  }                                                                                                     \
  at::Tensor &op##_out(const at::Tensor &grad, const at::Tensor &out, at::Tensor &grad_input) {         \
    if (!use_repro("aten::" #op ".grad_input", type2(grad, out)))                                       \
      return at::cpu::op##_outf(grad, out, grad_input);                                                 \
    binary(grad_input, grad, out, [](const float *v) { return expr; });                                 \
    return grad_input;                                                                                  \
  }
POT_REPRO_FROM_OUTPUT(sigmoid_backward, v[0] * ((1.0f - v[1]) * v[1]))
POT_REPRO_FROM_OUTPUT(tanh_backward, v[0] * (1.0f - v[1] * v[1]))
#undef POT_REPRO_FROM_OUTPUT

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
// A sum or mean over the leading dims of a contiguous tensor (a bias
// gradient: the sum over every row of a batch) sums the columns in place
// instead (repro::column_sums: each column's lanes in the row order a
// copied row would have, so the same bits without the transposing copy).
enum class Leading { kNone, kSum, kMean };

template <class RowFn>
at::Tensor reduce_rows(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, RowFn row_fn,
                       Leading leading = Leading::kNone) {
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
  int64_t outer = 1;
  for (int64_t s : kept_shape) outer *= s;
  at::Tensor out = at::empty({outer}, self.options());
  const bool prefix = !red.empty() && red.back() == static_cast<int64_t>(red.size()) - 1 &&
                      static_cast<int64_t>(red.size()) < self.dim();
  if (leading != Leading::kNone && prefix && self.is_contiguous() && inner > 0 && outer > 0) {
    const float *px = self.data_ptr<float>();
    float *po = out.data_ptr<float>();
    at::parallel_for(0, outer, std::max<int64_t>(64, grain_for(inner)), [&](int64_t c0, int64_t c1) {
      FpEnvironment env;
      repro::column_sums(px + c0, inner, c1 - c0, outer, po + c0);
      if (leading == Leading::kMean)
        for (int64_t c = c0; c < c1; ++c) po[c] = po[c] / static_cast<float>(inner);
    });
    return out.view(out_shape);
  }
  const at::Tensor x = self.dim() == 0 ? self.reshape({1}) : self.permute(perm).contiguous();
  const float *px = x.data_ptr<float>();
  float *po = out.data_ptr<float>();
  at::parallel_for(0, outer, grain_for(inner), [&](int64_t r0, int64_t r1) {
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
  if (!use_repro_converting("aten::sum.dim_IntList", self.scalar_type(), t)) return at::cpu::sum(self, dim, keepdim, dtype);
  return reduce_rows(self, dim, keepdim, row_sum, Leading::kSum);
}
at::Tensor &sum_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype, at::Tensor &out) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  if (!use_repro_converting("aten::sum.IntList_out", self.scalar_type(), t) ||
      !use_repro_converting("aten::sum.IntList_out", t, out.scalar_type()))
    return at::cpu::sum_outf(self, dim, keepdim, dtype, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_sum, Leading::kSum);
  return assign_out(out, r);
}

// mean = (the sum order over the reduced elements) / count, count the
// number of reduced elements as a binary32.
at::Tensor mean_value(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim) {
  return reduce_rows(self, dim, keepdim,
                     [](const float *x, int64_t n) { return repro::lane_sum(x, n) / static_cast<float>(n); },
                     Leading::kMean);
}
at::Tensor mean_dim(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  if (!use_repro_converting("aten::mean.dim", self.scalar_type(), t)) return at::cpu::mean(self, dim, keepdim, dtype);
  return mean_value(self, dim, keepdim);
}
at::Tensor &mean_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                     c10::optional<at::ScalarType> dtype, at::Tensor &out) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  if (!use_repro_converting("aten::mean.out", self.scalar_type(), t) ||
      !use_repro_converting("aten::mean.out", t, out.scalar_type()))
    return at::cpu::mean_outf(self, dim, keepdim, dtype, out);
  at::Tensor r = mean_value(self, dim, keepdim);
  return assign_out(out, r);
}

// mse_loss: d = x - t, d * d per element; sum: the sum order over them;
// mean: that sum / count. Backward: (c * d) * g with c = 2 / count (mean)
// or 2, g the output gradient (per element for none).
at::Tensor mse_loss_fn(const at::Tensor &self, const at::Tensor &target, int64_t reduction) {
  if (!use_repro("aten::mse_loss.default", type2(self, target))) return at::cpu::mse_loss(self, target, reduction);
  at::Tensor sq = binary(at::Tensor(), self, target, [](const float *v) {
    const float d = v[0] - v[1];
    return d * d;
  });
  if (reduction == at::Reduction::None) return sq;
  const at::Tensor flat = sq.contiguous().view({-1});
  FpEnvironment env;
  float total = repro::lane_sum(flat.data_ptr<float>(), flat.numel());
  if (reduction == at::Reduction::Mean) total = total / static_cast<float>(flat.numel());
  return at::scalar_tensor(total, sq.options());
}
at::Tensor mse_loss_backward_fn(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                                int64_t reduction) {
  if (!use_repro("aten::mse_loss_backward.default", type3(grad, self, target)))
    return at::cpu::mse_loss_backward(grad, self, target, reduction);
  const float c = reduction == at::Reduction::Mean ? 2.0f / static_cast<float>(self.numel()) : 2.0f;
  return ternary(at::Tensor(), self, target, grad, [c](const float *v) { return (c * (v[0] - v[1])) * v[2]; });
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
  if (!use_repro_converting("aten::norm.out", self.scalar_type(), out.scalar_type()) ||
      !norm2("aten::norm.out", self, p))
    return at::cpu::norm_outf(self, p, dim, keepdim, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_norm2);
  return assign_out(out, r);
}
at::Tensor vector_norm(const at::Tensor &self, const at::Scalar &ord, at::OptionalIntArrayRef dim, bool keepdim,
                       c10::optional<at::ScalarType> dtype) {
  if (!use_repro_converting("aten::linalg_vector_norm.default", self.scalar_type(),
                            dtype.value_or(self.scalar_type())) ||
      !norm2("aten::linalg_vector_norm.default", self, ord))
    return at::cpu::linalg_vector_norm(self, ord, dim, keepdim, dtype);
  return reduce_rows(self, dim, keepdim, row_norm2);
}
at::Tensor &vector_norm_out(const at::Tensor &self, const at::Scalar &ord, at::OptionalIntArrayRef dim, bool keepdim,
                            c10::optional<at::ScalarType> dtype, at::Tensor &out) {
  if (!use_repro_converting("aten::linalg_vector_norm.out", self.scalar_type(), dtype.value_or(self.scalar_type())) ||
      !use_repro_converting("aten::linalg_vector_norm.out", self.scalar_type(), out.scalar_type()) ||
      !norm2("aten::linalg_vector_norm.out", self, ord))
    return at::cpu::linalg_vector_norm_outf(self, ord, dim, keepdim, dtype, out);
  at::Tensor r = reduce_rows(self, dim, keepdim, row_norm2);
  return assign_out(out, r);
}

// amax: `maximum` folded over the reduced elements in index order from
// the first (PROTOCOL 14.6): exact, so only NaN payloads and the sign of
// zero could depend on an order, and the fold fixes both.
float row_amax(const float *x, int64_t n) {
  float m = x[0];
  for (int64_t j = 1; j < n; ++j) m = MaximumOp{}(std::array<float, 2>{m, x[j]}.data());
  return m;
}
at::Tensor amax_value(const char *op, const at::Tensor &self, at::IntArrayRef dim, bool keepdim) {
  int64_t reduced = 1;
  for (int64_t d : reduced_dims(self, dim)) reduced *= self.size(d);
  TORCH_CHECK(reduced > 0, op, ": the reduced dims hold no element");
  return reduce_rows(self, dim, keepdim, row_amax);
}
at::Tensor amax_fn(const at::Tensor &self, at::IntArrayRef dim, bool keepdim) {
  if (!use_repro("aten::amax.default", self.scalar_type())) return at::cpu::amax(self, dim, keepdim);
  return amax_value("amax", self, dim, keepdim);
}
at::Tensor &amax_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out) {
  if (!use_repro_converting("aten::amax.out", self.scalar_type(), out.scalar_type()))
    return at::cpu::amax_outf(self, dim, keepdim, out);
  at::Tensor r = amax_value("amax", self, dim, keepdim);
  return assign_out(out, r);
}

// ---------------------------------------------------------------- matrix products

at::Tensor mm_fn(const at::Tensor &a, const at::Tensor &b) {
  if (!use_repro("aten::mm.default", type2(a, b))) return at::cpu::mm(a, b);
  return product(a, b);
}
at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
  if (!use_repro("aten::mm.out", type2(a, b))) return at::cpu::mm_outf(a, b, out);
  at::Tensor r = product(a, b);
  return assign_out(out, r);
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
  return assign_out(out, r);
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
  at::parallel_for(0, rows, grain_for(n), [&](int64_t r0, int64_t r1) {
    FpEnvironment env;
    for (int64_t r = r0; r < r1; ++r) fn(px + r * n, py ? py + r * n : nullptr, n, po + r * n);
  });
  return moved ? out.transpose(d, -1).contiguous() : out;
}

at::Tensor log_softmax_fn(const at::Tensor &self, int64_t dim, bool half_to_float) {
  if (!use_repro_converting("aten::_log_softmax.default", self.scalar_type(),
                            half_to_float ? at::kFloat : self.scalar_type()) ||
      half_to_float)
    return at::cpu::_log_softmax(self, dim, half_to_float);
  return along_rows(self, nullptr, dim,
                    [](const float *x, const float *, int64_t n, float *o) { repro::log_softmax_row(x, n, o); });
}
at::Tensor log_softmax_backward_fn(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                                   at::ScalarType input_dtype) {
  const at::ScalarType t = type2(grad, output);
  if (!use_repro_converting("aten::_log_softmax_backward_data.default", t, bf16_as_f32(input_dtype)))
    return at::cpu::_log_softmax_backward_data(grad, output, dim, input_dtype);
  return to_type(along_rows(grad, &output, dim, [](const float *g, const float *y, int64_t n, float *o) {
                   repro::log_softmax_backward_row(g, y, n, o);
                 }),
                 input_dtype);
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
                                               IgnoreIndex ignore_arg) {
  const int64_t ignore_index = as_int(ignore_arg);
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
                        const c10::optional<at::Tensor> &weight, int64_t reduction, IgnoreIndex ignore_arg,
                        const at::Tensor &total_weight) {
  const int64_t ignore_index = as_int(ignore_arg);
  if (!nll_repro("aten::nll_loss_backward.default", self, weight))
    return at::cpu::nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  return nll_backward_value(grad_output, self, target, weight, reduction, ignore_index, total_weight);
}

// ---------------------------------------------------------------- GPT: GELU, softmax, LayerNorm, bmm, dropout, embeddings

bool gelu_repro(const char *op, at::ScalarType t, c10::string_view approximate) {
  if (!use_repro(op, t)) return false;
  if (approximate != "none") {
    note_violation(fmt::format("{} with approximate='{}' has no pot-repro/1 kernel (the arithmetic defines the erf "
                               "form)", op, std::string(approximate)));
    return false;
  }
  return true;
}
at::Tensor gelu_into(at::Tensor out, const at::Tensor &a) {
  return unary(
      std::move(out), a, [](const float *v) { return repro::gelu_f32(v[0]); },
      [](float *o, const float *const *in, int64_t n) { repro::gelu_run(in[0], n, o); });
}
at::Tensor gelu_backward_into(at::Tensor out, const at::Tensor &grad, const at::Tensor &self) {
  return binary(
      std::move(out), grad, self, [](const float *v) { return repro::gelu_backward_f32(v[0], v[1]); }, false,
      [](float *o, const float *const *in, int64_t n) { repro::gelu_backward_run(in[0], in[1], n, o); });
}
at::Tensor gelu_fn(const at::Tensor &a, c10::string_view approximate) {
  if (!gelu_repro("aten::gelu.default", a.scalar_type(), approximate)) return at::cpu::gelu(a, approximate);
  return gelu_into(at::Tensor(), a);
}
at::Tensor &gelu_inplace(at::Tensor &a, c10::string_view approximate) {
  if (!gelu_repro("aten::gelu_.default", a.scalar_type(), approximate)) return at::cpu::gelu_(a, approximate);
  gelu_into(a, a);
  return a;
}
at::Tensor &gelu_out(const at::Tensor &a, c10::string_view approximate, at::Tensor &out) {
  if (!gelu_repro("aten::gelu.out", a.scalar_type(), approximate)) return at::cpu::gelu_outf(a, approximate, out);
  gelu_into(out, a);
  return out;
}
at::Tensor gelu_backward_fn(const at::Tensor &grad, const at::Tensor &self, c10::string_view approximate) {
  if (!gelu_repro("aten::gelu_backward.default", type2(grad, self), approximate))
    return at::cpu::gelu_backward(grad, self, approximate);
  return gelu_backward_into(at::Tensor(), grad, self);
}
at::Tensor &gelu_backward_out(const at::Tensor &grad, const at::Tensor &self, c10::string_view approximate,
                              at::Tensor &out) {
  if (!gelu_repro("aten::gelu_backward.grad_input", type2(grad, self), approximate))
    return at::cpu::gelu_backward_outf(grad, self, approximate, out);
  gelu_backward_into(out, grad, self);
  return out;
}

at::Tensor softmax_fn(const at::Tensor &self, int64_t dim, bool half_to_float) {
  if (!use_repro_converting("aten::_softmax.default", self.scalar_type(),
                            half_to_float ? at::kFloat : self.scalar_type()) ||
      half_to_float)
    return at::cpu::_softmax(self, dim, half_to_float);
  return along_rows(self, nullptr, dim,
                    [](const float *x, const float *, int64_t n, float *o) { repro::softmax_row(x, n, o); });
}
at::Tensor softmax_backward_fn(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                               at::ScalarType input_dtype) {
  const at::ScalarType t = type2(grad, output);
  if (!use_repro_converting("aten::_softmax_backward_data.default", t, bf16_as_f32(input_dtype)))
    return at::cpu::_softmax_backward_data(grad, output, dim, input_dtype);
  return to_type(along_rows(grad, &output, dim, [](const float *g, const float *y, int64_t n, float *o) {
                   repro::softmax_backward_row(g, y, n, o);
                 }),
                 input_dtype);
}

// Layer normalization over the last dims (normalized_shape): rows of N
// values, mean and rstd shaped as ATen shapes them (the leading dims, then
// a 1 per normalized dim).
struct LayerNormShape {
  int64_t rows = 1, n = 1;
  std::vector<int64_t> stat_shape;
};
LayerNormShape layer_norm_shape(const at::Tensor &input, c10::SymIntArrayRef normalized_shape) {
  const at::IntArrayRef norm = int_list(normalized_shape);
  const int64_t axis = input.dim() - static_cast<int64_t>(norm.size());
  TORCH_CHECK(axis >= 0, "layer_norm: normalized_shape ", norm, " has more dims than the input ", input.sizes());
  LayerNormShape s;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d < axis) {
      s.rows *= input.size(d);
      s.stat_shape.push_back(input.size(d));
    } else {
      TORCH_CHECK(input.size(d) == norm[static_cast<size_t>(d - axis)], "layer_norm: normalized_shape ", norm,
                  " does not end the input's shape ", input.sizes());
      s.n *= input.size(d);
      s.stat_shape.push_back(1);
    }
  }
  return s;
}
const float *optional_data(const c10::optional<at::Tensor> &t, at::Tensor &keep, int64_t n) {
  if (!t.has_value() || !t->defined()) return nullptr;
  TORCH_CHECK(t->numel() == n, "layer_norm: weight or bias of ", t->numel(), " elements for ", n, " normalized");
  keep = t->to(at::kFloat).contiguous();
  return keep.data_ptr<float>();
}
bool layer_norm_repro(const char *op, const at::Tensor &input, const c10::optional<at::Tensor> &w,
                      const c10::optional<at::Tensor> &b) {
  at::ScalarType t = input.scalar_type();
  if (w.has_value() && w->defined()) t = c10::promoteTypes(t, w->scalar_type());
  if (b.has_value() && b->defined()) t = c10::promoteTypes(t, b->scalar_type());
  return use_repro(op, t);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fn(const at::Tensor &input,
                                                              c10::SymIntArrayRef normalized_shape,
                                                              const c10::optional<at::Tensor> &weight,
                                                              const c10::optional<at::Tensor> &bias, double eps) {
  if (!layer_norm_repro("aten::native_layer_norm.default", input, weight, bias))
    return at::cpu::native_layer_norm(input, int_list(normalized_shape), weight, bias, eps);
  const LayerNormShape s = layer_norm_shape(input, normalized_shape);
  const at::Tensor x = input.contiguous();
  at::Tensor wk, bk;
  const float *w = optional_data(weight, wk, s.n), *b = optional_data(bias, bk, s.n);
  at::Tensor out = at::empty(input.sizes(), x.options());
  at::Tensor mean = at::empty({s.rows}, x.options()), rstd = at::empty({s.rows}, x.options());
  const float *px = x.data_ptr<float>();
  float *po = out.data_ptr<float>(), *pm = mean.data_ptr<float>(), *pr = rstd.data_ptr<float>();
  const float e = static_cast<float>(eps);
  at::parallel_for(0, s.rows, grain_for(s.n), [&](int64_t r0, int64_t r1) {
    FpEnvironment env;
    for (int64_t r = r0; r < r1; ++r) repro::layer_norm_row(px + r * s.n, s.n, w, b, e, po + r * s.n, pm + r, pr + r);
  });
  return {out, mean.view(s.stat_shape), rstd.view(s.stat_shape)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_fn(
    const at::Tensor &grad_out, const at::Tensor &input, c10::SymIntArrayRef normalized_shape, const at::Tensor &mean,
    const at::Tensor &rstd, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    std::array<bool, 3> mask) {
  if (!layer_norm_repro("aten::native_layer_norm_backward.default", input, weight, bias))
    return at::cpu::native_layer_norm_backward(grad_out, input, int_list(normalized_shape), mean, rstd,
                                               weight, bias, mask);
  const LayerNormShape s = layer_norm_shape(input, normalized_shape);
  const at::Tensor x = input.contiguous(), g = grad_out.contiguous();
  const at::Tensor mu = mean.to(at::kFloat).contiguous(), rs = rstd.to(at::kFloat).contiguous();
  at::Tensor wk;
  const float *w = optional_data(weight, wk, s.n);
  const float *px = x.data_ptr<float>(), *pg = g.data_ptr<float>(), *pmu = mu.data_ptr<float>(),
              *prs = rs.data_ptr<float>();
  at::Tensor dx, dw, db;
  if (mask[0]) {
    dx = at::empty(input.sizes(), x.options());
    float *pd = dx.data_ptr<float>();
    at::parallel_for(0, s.rows, grain_for(s.n), [&](int64_t r0, int64_t r1) {
      FpEnvironment env;
      for (int64_t r = r0; r < r1; ++r)
        repro::layer_norm_backward_row(pg + r * s.n, px + r * s.n, s.n, w, pmu[r], prs[r], pd + r * s.n);
    });
  }
  // The weight's and bias's gradients: column sums over the rows, in row
  // order, of g * xh and of g.
  FpEnvironment env;
  if (mask[1] && weight.has_value() && weight->defined()) {
    std::vector<float> gx(static_cast<size_t>(s.rows * s.n));
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t j = 0; j < s.n; ++j) {
        const int64_t i = r * s.n + j;
        gx[static_cast<size_t>(i)] = pg[i] * ((px[i] - pmu[r]) * prs[r]);
      }
    dw = at::empty(weight->sizes(), x.options());
    repro::column_sums(gx.data(), s.rows, s.n, s.n, dw.data_ptr<float>());
  }
  if (mask[2] && bias.has_value() && bias->defined()) {
    db = at::empty(bias->sizes(), x.options());
    repro::column_sums(pg, s.rows, s.n, s.n, db.data_ptr<float>());
  }
  return {dx, dw, db};
}

// a [B, M, K] @ b [B, K, N]: each batch's product by the chains of mm.
at::Tensor batch_product(const at::Tensor &a, const at::Tensor &b) {
  TORCH_CHECK(a.dim() == 3 && b.dim() == 3, "pot-repro/1: bmm expects 3-D tensors, got ", a.dim(), "-D and ",
              b.dim(), "-D");
  TORCH_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "bmm: shapes ", a.sizes(), " and ", b.sizes(),
              " cannot be multiplied");
  const int64_t nb = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  at::Tensor c = at::empty({nb, m, n}, a.options().memory_format(at::MemoryFormat::Contiguous));
  if (nb == 0 || m == 0 || n == 0) return c;
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  float *pc = c.data_ptr<float>();
  const repro::Isa isa = repro::best_isa();
  at::parallel_for(0, nb, grain_for(m * n * std::max<int64_t>(k, 1), kProductSplit), [&](int64_t b0, int64_t b1) {
    FpEnvironment env;
    for (int64_t i = b0; i < b1; ++i)
      repro::matmul_rows(repro::Operand{pa + i * a.stride(0), a.stride(1), a.stride(2)},
                         repro::Operand{pb + i * b.stride(0), b.stride(1), b.stride(2)}, pc + i * m * n, n, k, n, 0,
                         m, isa);
  });
  return c;
}
at::Tensor bmm_fn(const at::Tensor &a, const at::Tensor &b) {
  if (!use_repro("aten::bmm.default", type2(a, b))) return at::cpu::bmm(a, b);
  return batch_product(a, b);
}
at::Tensor &bmm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
  if (!use_repro("aten::bmm.out", type2(a, b))) return at::cpu::bmm_outf(a, b, out);
  at::Tensor r = batch_product(a, b);
  return assign_out(out, r);
}

// Bernoulli draws of pot-repro/1 (PROTOCOL 14.6): the call takes one
// 64-bit key from the generator (its random64(), which advances it the same
// way on every build), and element i (row-major) is 1 when uniform(key, i)
// < p, else 0.
at::Tensor &bernoulli_float(at::Tensor &self, double p, c10::optional<at::Generator> generator) {
  if (!use_repro("aten::bernoulli_.float", self.scalar_type())) return at::cpu::bernoulli_(self, p, generator);
  TORCH_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  auto *gen = at::get_generator_or_default<at::CPUGeneratorImpl>(generator, at::detail::getDefaultCPUGenerator());
  uint64_t key = 0;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    key = gen->random64();
  }
  const float pf = static_cast<float>(p);
  at::Tensor draws = at::empty(self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  float *pd = draws.data_ptr<float>();
  at::parallel_for(0, draws.numel(), 32768, [&](int64_t i0, int64_t i1) {
    FpEnvironment env;
    repro::uniform_run(key, static_cast<uint64_t>(i0), i1 - i0, pd + i0);
    for (int64_t i = i0; i < i1; ++i) pd[i] = pd[i] < pf ? 1.0f : 0.0f;
  });
  self.copy_(draws);
  return self;
}

// The embedding's gradient: row v of the result is the sequential sum, in
// increasing i, of the gradient rows i whose index is v (((+0 + g_i1) +
// g_i2) + ...); padding_idx's row stays +0.
using NumWeights = ArgOf<at::_ops::embedding_dense_backward::schema, 2>::type;
using PaddingIdx = ArgOf<at::_ops::embedding_dense_backward::schema, 3>::type;
at::Tensor embedding_backward_fn(const at::Tensor &grad_output, const at::Tensor &indices, NumWeights num_weights_arg,
                                 PaddingIdx padding_arg, bool scale_grad_by_freq) {
  const int64_t num_weights = as_int(num_weights_arg), padding_idx = as_int(padding_arg);
  if (!use_repro("aten::embedding_dense_backward.default", grad_output.scalar_type()))
    return at::cpu::embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq);
  if (scale_grad_by_freq) {
    note_violation("aten::embedding_dense_backward.default with scale_grad_by_freq has no pot-repro/1 kernel");
    return at::cpu::embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq);
  }
  const at::Tensor idx = indices.reshape({-1}).to(at::kLong).contiguous();
  const int64_t count = idx.numel(), d = grad_output.size(-1);
  const at::Tensor g = grad_output.reshape({count, d}).contiguous();
  const int64_t *pi = idx.data_ptr<int64_t>();
  // The rows of each index, in increasing i (a stable counting sort).
  std::vector<int64_t> start(static_cast<size_t>(num_weights) + 1, 0), order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    TORCH_CHECK(pi[i] >= 0 && pi[i] < num_weights, "embedding: index ", pi[i], " is out of range for ", num_weights,
                " rows");
    ++start[static_cast<size_t>(pi[i]) + 1];
  }
  for (size_t v = 0; v < static_cast<size_t>(num_weights); ++v) start[v + 1] += start[v];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(next[static_cast<size_t>(pi[i])]++)] = i;
  at::Tensor out = at::zeros({num_weights, d}, g.options());
  const float *pg = g.data_ptr<float>();
  float *po = out.data_ptr<float>();
  at::parallel_for(0, num_weights, std::max<int64_t>(64, grain_for(d)), [&](int64_t v0, int64_t v1) {
    FpEnvironment env;
    for (int64_t v = v0; v < v1; ++v) {
      if (v == padding_idx) continue;
      float *row = po + v * d;
      for (int64_t k = start[static_cast<size_t>(v)]; k < start[static_cast<size_t>(v) + 1]; ++k) {
        const float *src = pg + order[static_cast<size_t>(k)] * d;
        for (int64_t j = 0; j < d; ++j) row[j] = row[j] + src[j];
      }
    }
  });
  return out;
}

}  // namespace

void register_kernels(torch::Library &lib, std::vector<std::string> &names) {
  Registrar reg{lib, names};
#define POT_KERNEL(op, name, fn) POT_REPRO_KERNEL(reg, op, name, fn)
  POT_KERNEL(add_Tensor, "add.Tensor", add_tensor);
  POT_KERNEL(add__Tensor, "add_.Tensor", add_inplace);
  POT_KERNEL(add_out, "add.out", add_out);
  POT_KERNEL(sub_Tensor, "sub.Tensor", sub_tensor);
  POT_KERNEL(sub__Tensor, "sub_.Tensor", sub_inplace);
  POT_KERNEL(sub_out, "sub.out", sub_out);
  POT_KERNEL(mul_Tensor, "mul.Tensor", mul_tensor);
  POT_KERNEL(mul__Tensor, "mul_.Tensor", mul_inplace);
  POT_KERNEL(mul_out, "mul.out", mul_out);
  POT_KERNEL(div_Tensor, "div.Tensor", div_tensor);
  POT_KERNEL(div__Tensor, "div_.Tensor", div_inplace);
  POT_KERNEL(div_out, "div.out", div_out);
  POT_KERNEL(maximum, "maximum", maximum_tensor);
  POT_KERNEL(maximum_out, "maximum.out", maximum_out);
  POT_KERNEL(amax, "amax", amax_fn);
  POT_KERNEL(amax_out, "amax.out", amax_out);
  POT_KERNEL(sqrt, "sqrt", sqrt_fn);
  POT_KERNEL(sqrt_, "sqrt_", sqrt_inplace);
  POT_KERNEL(sqrt_out, "sqrt.out", sqrt_out);
  POT_KERNEL(reciprocal, "reciprocal", reciprocal_fn);
  POT_KERNEL(reciprocal_, "reciprocal_", reciprocal_inplace);
  POT_KERNEL(reciprocal_out, "reciprocal.out", reciprocal_out);
  POT_KERNEL(neg, "neg", neg_fn);
  POT_KERNEL(neg_, "neg_", neg_inplace);
  POT_KERNEL(neg_out, "neg.out", neg_out);
  POT_KERNEL(clamp, "clamp", clamp_fn);
  POT_KERNEL(clamp_, "clamp_", clamp_inplace);
  POT_KERNEL(clamp_out, "clamp.out", clamp_out);
  POT_KERNEL(clamp_min, "clamp_min", clamp_min_fn);
  POT_KERNEL(clamp_min_, "clamp_min_", clamp_min_inplace);
  POT_KERNEL(clamp_min_out, "clamp_min.out", clamp_min_out);
  POT_KERNEL(relu, "relu", relu_fn);
  POT_KERNEL(relu_, "relu_", relu_inplace);
  POT_KERNEL(threshold_backward, "threshold_backward", threshold_backward_fn);
  POT_KERNEL(threshold_backward_grad_input, "threshold_backward.grad_input", threshold_backward_out);
  POT_KERNEL(addcmul, "addcmul", addcmul_fn);
  POT_KERNEL(addcmul_, "addcmul_", addcmul_inplace);
  POT_KERNEL(addcmul_out, "addcmul.out", addcmul_out);
  POT_KERNEL(addcdiv, "addcdiv", addcdiv_fn);
  POT_KERNEL(addcdiv_, "addcdiv_", addcdiv_inplace);
  POT_KERNEL(addcdiv_out, "addcdiv.out", addcdiv_out);
  POT_KERNEL(lerp_Scalar, "lerp.Scalar", lerp_fn);
  POT_KERNEL(lerp__Scalar, "lerp_.Scalar", lerp_inplace);
  POT_KERNEL(lerp_Scalar_out, "lerp.Scalar_out", lerp_out);
  POT_KERNEL(sum_dim_IntList, "sum.dim_IntList", sum_dim);
  POT_KERNEL(sum_IntList_out, "sum.IntList_out", sum_out);
  POT_KERNEL(mean_dim, "mean.dim", mean_dim);
  POT_KERNEL(mean_out, "mean.out", mean_out);
  POT_KERNEL(mse_loss, "mse_loss", mse_loss_fn);
  POT_KERNEL(mse_loss_backward, "mse_loss_backward", mse_loss_backward_fn);
  POT_KERNEL(norm_ScalarOpt_dim, "norm.ScalarOpt_dim", norm_dim);
  POT_KERNEL(norm_out, "norm.out", norm_out);
  POT_KERNEL(linalg_vector_norm, "linalg_vector_norm", vector_norm);
  POT_KERNEL(linalg_vector_norm_out, "linalg_vector_norm.out", vector_norm_out);
  POT_KERNEL(mm, "mm", mm_fn);
  POT_KERNEL(mm_out, "mm.out", mm_out);
  POT_KERNEL(addmm, "addmm", addmm_fn);
  POT_KERNEL(addmm_, "addmm_", addmm_inplace);
  POT_KERNEL(addmm_out, "addmm.out", addmm_out);
  POT_KERNEL(_log_softmax, "_log_softmax", log_softmax_fn);
  POT_KERNEL(_log_softmax_backward_data, "_log_softmax_backward_data", log_softmax_backward_fn);
  POT_KERNEL(nll_loss_forward, "nll_loss_forward", nll_forward);
  POT_KERNEL(nll_loss_backward, "nll_loss_backward", nll_backward);
  POT_KERNEL(tanh, "tanh", tanh_fn);
  POT_KERNEL(tanh_, "tanh_", tanh_inplace);
  POT_KERNEL(tanh_out, "tanh.out", tanh_out);
  POT_KERNEL(sigmoid, "sigmoid", sigmoid_fn);
  POT_KERNEL(sigmoid_, "sigmoid_", sigmoid_inplace);
  POT_KERNEL(sigmoid_out, "sigmoid.out", sigmoid_out);
  POT_KERNEL(tanh_backward, "tanh_backward", tanh_backward_fn);
  POT_KERNEL(tanh_backward_grad_input, "tanh_backward.grad_input", tanh_backward_out);
  POT_KERNEL(sigmoid_backward, "sigmoid_backward", sigmoid_backward_fn);
  POT_KERNEL(sigmoid_backward_grad_input, "sigmoid_backward.grad_input", sigmoid_backward_out);
  POT_KERNEL(gelu, "gelu", gelu_fn);
  POT_KERNEL(gelu_, "gelu_", gelu_inplace);
  POT_KERNEL(gelu_out, "gelu.out", gelu_out);
  POT_KERNEL(gelu_backward, "gelu_backward", gelu_backward_fn);
  POT_KERNEL(gelu_backward_grad_input, "gelu_backward.grad_input", gelu_backward_out);
  POT_KERNEL(_softmax, "_softmax", softmax_fn);
  POT_KERNEL(_softmax_backward_data, "_softmax_backward_data", softmax_backward_fn);
  POT_KERNEL(native_layer_norm, "native_layer_norm", layer_norm_fn);
  POT_KERNEL(native_layer_norm_backward, "native_layer_norm_backward", layer_norm_backward_fn);
  POT_KERNEL(bmm, "bmm", bmm_fn);
  POT_KERNEL(bmm_out, "bmm.out", bmm_out);
  POT_KERNEL(bernoulli__float, "bernoulli_.float", bernoulli_float);
  POT_KERNEL(embedding_dense_backward, "embedding_dense_backward", embedding_backward_fn);
#undef POT_KERNEL
  register_conv_kernels(reg);
}

}  // namespace pot::repro_aten
