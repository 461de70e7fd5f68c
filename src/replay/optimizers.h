// The optimizer and gradient-clipping ports of the replay (docs/PROTOCOL.md
// 21.4, docs/determinism.md "Two torch lines"): each follows, op for op, the
// single-tensor code (`_single_tensor_<name>`, what torch.optim runs on CPU
// by default) of the torch release this LibTorch belongs to, selected at
// build time. The spec names the release it was trained on and
// check_replayable refuses any other before a port runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/version.h>

#include "spec/spec.h"

namespace pot::replay {

#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kTorch2 = true;
#else
inline constexpr bool kTorch2 = false;
#endif

// A Python number as an operator argument. torch's Python binding turns the
// float of `t.mul_(0.9)` or `t / 3.0` into a 0-dim "wrapped number" tensor
// and calls the Tensor overload (aten::mul_.Tensor); C++'s t.mul_(0.9) calls
// aten::mul_.Scalar, which in torch 2.x rounds otherwise for BF16 and F16.
// Only add, sub, mul and div (and their operators) take numbers as tensors;
// every other operator (lerp_, clamp, addcmul_'s value) gets a Scalar.
at::Tensor py_number(const at::Scalar &v);

// One parameter as a step updates it.
struct ParamState {
  std::string name;
  at::Tensor param;
  std::map<std::string, at::Tensor> optim;  // key -> tensor (a copy owned by the replay)
  size_t group = 0;                         // the spec's parameter group
};

// The per-parameter state keys torch.optim keeps for `o` on this torch line
// (1.13's RMSprop and Adadelta count steps in a Python int: not state).
std::vector<std::string> optimizer_keys(const spec::OptimizerSpec &o);
// Keys held as F32 scalars ("step", "mu_product") rather than shaped like
// the parameter.
bool is_scalar_key(const std::string &key);
// The state torch.optim holds for `param` before its first update: none,
// except Adagrad's, made when the optimizer is constructed (step 0, sum
// full of initial_accumulator_value).
std::map<std::string, at::Tensor> fresh_state(const spec::OptimizerSpec &o, const at::Tensor &param);
// Whether `o` holds state before a parameter's first update (fresh_state is
// not empty): Adagrad.
bool constructs_state(const spec::OptimizerSpec &o);
// Throws kUnsupported when this torch line has no such optimizer or option
// (1.13: Muon; NAdam and RAdam without maximize and decoupled weight
// decay); `where` names the group.
void check_supported(const spec::OptimizerSpec &o, const std::string &where);
// Throws kInvalidArgument for a parameter the optimizer cannot update
// (Muon: 2-D only); `where` names the parameter.
void check_param(const spec::OptimizerSpec &o, const at::Tensor &param, const std::string &where);

// torch.nn.utils.clip_grad_norm_(parameters, max_norm) and
// clip_grad_value_(parameters, clip_value) over the parameters' gradients.
void clip_grad_norm(const std::vector<ParamState> &params, double max_norm);
void clip_grad_value(const std::vector<ParamState> &params, double clip_value);

// One parameter's update by `o` at learning rate `lr`, whose gradient is `grad`.
void optimizer_update(ParamState &p, const at::Tensor &grad, const spec::OptimizerSpec &o, double lr);

}  // namespace pot::replay
