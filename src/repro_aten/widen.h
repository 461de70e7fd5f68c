// BF16 under pot-repro/1 (docs/PROTOCOL.md 14.6, "BF16"): an operator on
// bfloat16 operands computes its binary32 definition on the operands
// widened to binary32 (exact), and each floating-point result is rounded
// to bfloat16 once, to nearest-even. Widened<schema, fn> wraps a binary32
// kernel so: BF16 tensors among the arguments are widened, the kernel runs,
// and then
//   - a tensor the operator writes (in place, out=, or an argument its
//     schema marks (a!), like batch norm's running statistics) gets the
//     result back, rounded to its own type;
//   - a returned tensor is rounded to bfloat16 when every floating-point
//     operand with a dimension was bfloat16 and no argument names a result
//     type (ATen's promotion: with a binary32 operand the result is
//     binary32, and a dtype argument decides for itself).
// Calls without a BF16 tensor, and calls outside a pot-repro/1 step, go to
// the kernel unchanged.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/Resize.h>

namespace pot::repro_aten {

bool active();

namespace widen_detail {

inline bool is_bf16(const at::Tensor &t) { return t.defined() && t.scalar_type() == at::kBFloat16; }
inline bool is_other_float(const at::Tensor &t) {
  return t.defined() && t.dim() > 0 && at::isFloatingType(t.scalar_type()) && t.scalar_type() != at::kBFloat16;
}

// What the arguments hold: BF16 tensors, floating tensors of other types
// (with a dimension), a result type named by an argument.
struct Census {
  bool bf16 = false;
  bool other_float = false;
  bool names_type = false;
  void see(const at::Tensor &t) {
    bf16 = bf16 || is_bf16(t);
    other_float = other_float || is_other_float(t);
  }
  void see(const c10::optional<at::Tensor> &t) {
    if (t.has_value()) see(*t);
  }
  void see(const c10::optional<at::ScalarType> &s) { names_type = names_type || s.has_value(); }
  void see(at::ScalarType) { names_type = true; }
  template <class T>
  void see(const T &) {}
};

// One argument as the binary32 kernel receives it. Holders of tensors keep
// the caller's tensor (orig) and the widened one.
template <class A, class = void>
struct Arg {
  A value;
  explicit Arg(A v) : value(std::forward<A>(v)) {}
  A get() { return std::forward<A>(value); }
  void write_back(bool) {}
  bool holds(const at::Tensor &) const { return false; }
};

template <>
struct Arg<const at::Tensor &> {
  const at::Tensor &orig;
  at::Tensor wide;
  explicit Arg(const at::Tensor &t) : orig(t), wide(is_bf16(t) ? t.to(at::kFloat) : t) {}
  const at::Tensor &get() { return wide; }
  void write_back(bool writes) {
    if (writes && is_bf16(orig)) const_cast<at::Tensor &>(orig).copy_(wide);
  }
  bool holds(const at::Tensor &) const { return false; }
};

template <>
struct Arg<at::Tensor &> {
  at::Tensor &orig;
  at::Tensor wide;
  explicit Arg(at::Tensor &t) : orig(t), wide(is_bf16(t) ? t.to(at::kFloat) : t) {}
  at::Tensor &get() { return wide; }
  void write_back(bool) {
    if (!is_bf16(orig)) return;
    at::native::resize_output(orig, wide.sizes());
    orig.copy_(wide);
  }
  bool holds(const at::Tensor &r) const { return r.is_same(wide); }
};

template <>
struct Arg<const c10::optional<at::Tensor> &> {
  const c10::optional<at::Tensor> &orig;
  c10::optional<at::Tensor> wide;
  explicit Arg(const c10::optional<at::Tensor> &t)
      : orig(t), wide(t.has_value() && is_bf16(*t) ? c10::optional<at::Tensor>(t->to(at::kFloat)) : t) {}
  const c10::optional<at::Tensor> &get() { return wide; }
  void write_back(bool writes) {
    if (writes && orig.has_value() && is_bf16(*orig)) const_cast<at::Tensor &>(*orig).copy_(*wide);
  }
  bool holds(const at::Tensor &) const { return false; }
};

inline at::Tensor narrow(at::Tensor r, bool to_bf16) {
  return to_bf16 && r.defined() && r.scalar_type() == at::kFloat ? r.to(at::kBFloat16) : r;
}

// Which arguments the schema marks written ((a!)): read once per operator.
inline std::vector<bool> written_arguments(const char *name, const char *overload) {
  std::vector<bool> out;
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op) return out;
  for (const c10::Argument &a : op->schema().arguments()) out.push_back(a.alias_info() && a.alias_info()->isWrite());
  return out;
}

}  // namespace widen_detail

template <class Op, class Sig, Sig *Fn>
struct Widened;

template <class Op, class R, class... A, R (*Fn)(A...)>
struct Widened<Op, R(A...), Fn> {
  static R call(A... a) {
    widen_detail::Census census;
    (census.see(a), ...);
    if (!census.bf16 || !active()) return Fn(std::forward<A>(a)...);
    static const std::vector<bool> writes = widen_detail::written_arguments(Op::name, Op::overload_name);
    std::tuple<widen_detail::Arg<A>...> args{widen_detail::Arg<A>(std::forward<A>(a))...};
    const bool to_bf16 = !census.other_float && !census.names_type;
    auto finish = [&] {
      std::apply(
          [&](auto &...h) {
            size_t i = 0;
            ((h.write_back(i < writes.size() && writes[i]), ++i), ...);
          },
          args);
    };
    if constexpr (std::is_same_v<R, at::Tensor &>) {
      at::Tensor &r = std::apply([](auto &...h) -> at::Tensor & { return Fn(h.get()...); }, args);
      at::Tensor *orig = nullptr;
      std::apply([&](auto &...h) { ((orig = orig ? orig : held(h, r)), ...); }, args);
      finish();
      TORCH_CHECK(orig, "pot-repro/1: ", Op::name, " returned a tensor that is none of its arguments");
      return *orig;
    } else if constexpr (std::is_same_v<R, at::Tensor>) {
      at::Tensor r = std::apply([](auto &...h) { return Fn(h.get()...); }, args);
      finish();
      return widen_detail::narrow(std::move(r), to_bf16);
    } else {
      R r = std::apply([](auto &...h) { return Fn(h.get()...); }, args);
      finish();
      return std::apply([&](auto &...t) { return R{widen_detail::narrow(std::move(t), to_bf16)...}; }, r);
    }
  }

 private:
  template <class H>
  static at::Tensor *held(H &h, const at::Tensor &r) {
    if constexpr (std::is_same_v<H, widen_detail::Arg<at::Tensor &>>) {
      return h.holds(r) ? &h.orig : nullptr;
    } else {
      (void)h;
      (void)r;
      return nullptr;
    }
  }
};

}  // namespace pot::repro_aten
