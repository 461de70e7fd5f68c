// What the pot-repro/1 kernel files share (kernels.cpp, conv_kernels.cpp):
// the per-call decision, scalar conversion, the matrix product, and the
// types of arguments that differ between torch lines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>
#include <torch/version.h>

#include "repro_aten/widen.h"

namespace pot::repro_aten {

// Whether `op` computes in pot-repro/1 here: inside a Scope, on binary32. A
// floating-point type the arithmetic does not define is a violation (the
// caller then runs ATen's kernel, whose result the scope voids).
bool use_repro(const char *op, at::ScalarType t);

// a [m, k] @ b [k, n] (2-D, binary32) by the chains of repro/matmul.h,
// threads taking whole rows: a new contiguous [m, n].
at::Tensor product(const at::Tensor &a, const at::Tensor &b);

inline float scalar_f32(const at::Scalar &s) { return s.to<float>(); }

// at::parallel_for's grain for items of `per_item` units of work each: the
// fewest items a task takes, so that work below `split` units runs on the
// calling thread. ATen's own kernels split at 32768 elements
// (at::internal::GRAIN_SIZE); a split costs waking a thread, which a
// small model's operators (a few microseconds each) do not repay. Results
// never depend on it (every kernel splits by outputs).
inline int64_t grain_for(int64_t per_item, int64_t split = 32768) {
  return std::max<int64_t>(1, split / std::max<int64_t>(per_item, 1));
}
// A matrix product's: fused multiply-adds are cheaper than element-wise
// steps (~500 K of them take what 32768 elements of ATen's loops take).
inline constexpr int64_t kProductSplit = int64_t{1} << 19;

// An argument's type as this LibTorch's schema declares it: torch 2 passes
// some integers and lists (nll_loss's ignore_index, convolution's stride)
// as SymInt, 1.13 as plain integers.
template <class F, size_t I>
struct ArgOf;
template <class R, class... A, size_t I>
struct ArgOf<R(A...), I> {
  using type = std::decay_t<std::tuple_element_t<I, std::tuple<A...>>>;
};

inline int64_t as_int(int64_t v) { return v; }
inline int64_t as_int(const c10::SymInt &v) { return v.expect_int(); }
inline at::IntArrayRef int_list(at::IntArrayRef v) { return v; }
// A SymInt list of concrete integers as an int list (torch 2 asks where from).
inline at::IntArrayRef int_list(c10::SymIntArrayRef v) {
#if TORCH_VERSION_MAJOR >= 2
  return c10::asIntArrayRefSlow(v, __FILE__, __LINE__);
#else
  return c10::asIntArrayRefSlow(v);
#endif
}

inline at::OptionalIntArrayRef opt_int_list(at::OptionalSymIntArrayRef v) {
  if (!v.has_value()) return c10::nullopt;
  return int_list(*v);
}

// Registers kernels into an IMPL library of aten at the CPU key, keeping
// each operator's name.overload.
struct Registrar {
  torch::Library &lib;
  std::vector<std::string> &names;
  template <class F>
  void add(const char *name, F fn) {
    lib.impl(name, std::move(fn));
    std::string key = std::string("aten::") + name;
    if (key.find('.') == std::string::npos) key += ".default";
    names.push_back(std::move(key));
  }
};

// Each kernel has exactly its operator's signature in this LibTorch (the
// build fails otherwise, naming it): registration cannot be refused. It is
// registered widened (widen.h): BF16 operands run through its binary32
// definition.
#define POT_REPRO_KERNEL(reg, op, name, fn)                                                        \
  static_assert(std::is_same_v<decltype(fn), at::_ops::op::schema>,                               \
                "the pot-repro/1 kernel of " name " does not have the operator's signature");     \
  (reg).add(name, ::c10::CompileTimeFunctionPointer<                                              \
                      at::_ops::op::schema, &Widened<at::_ops::op, at::_ops::op::schema, &fn>::call>())

// The CNN operators (conv_kernels.cpp).
void register_conv_kernels(Registrar &reg);

}  // namespace pot::repro_aten
